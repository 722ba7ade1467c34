import glob
import json
import logging
import os
import re

import pytest

from albert_tf import AlbertConfig
from helpers import ORIGINAL_MODEL, REPO_ROOT


def test_fixture_config_round_trip_keeps_unused_keys(tmp_path):
  path = os.path.join(ORIGINAL_MODEL, "albert_config.json")
  config = AlbertConfig.from_json_file(path)
  assert config.hidden_size == 32 and config.embedding_size == 16
  assert config.extra["net_structure_type"] == 0 and "down_scale_factor" in config.to_dict()
  out = tmp_path / "albert_config.json"
  config.to_json_file(str(out))
  with open(path) as f:
    original = json.load(f)
  with open(out) as f:
    written = json.load(f)
  assert written == original
  assert AlbertConfig.from_json_file(str(out)) == config


@pytest.mark.parametrize("name,hidden,layers,heads", [
    ("base", 768, 12, 12), ("large", 1024, 24, 16), ("xlarge", 2048, 24, 16),
    ("xxlarge", 4096, 12, 64)])
def test_presets(name, hidden, layers, heads):
  config = AlbertConfig.from_preset(name)
  assert (config.hidden_size, config.num_hidden_layers, config.num_attention_heads) == (
      hidden, layers, heads)
  assert config.embedding_size == 128 and config.vocab_size == 30000
  assert os.path.exists(os.path.join(REPO_ROOT, "data", "configs", f"albert_{name}_v2.json"))


def test_unknown_preset():
  with pytest.raises(ValueError, match="known presets"):
    AlbertConfig.from_preset("huge")


@pytest.mark.parametrize("changes,key", [
    ({"hidden_size": 30, "num_attention_heads": 4}, "num_attention_heads"),
    ({"num_hidden_groups": 4, "num_hidden_layers": 3}, "num_hidden_groups"),
    ({"num_hidden_groups": 0}, "num_hidden_groups"),
    ({"vocab_size": 0}, "vocab_size"),
    ({"embedding_size": -1}, "embedding_size"),
    ({"intermediate_size": 2.5}, "intermediate_size"),
    ({"hidden_act": "swish"}, "hidden_act"),
    ({"hidden_dropout_prob": 1.5}, "hidden_dropout_prob"),
])
def test_validation_names_the_key(changes, key):
  values = dict(vocab_size=100, embedding_size=8, hidden_size=16, num_hidden_layers=2,
                num_attention_heads=2, intermediate_size=32)
  values.update(changes)
  with pytest.raises(ValueError, match=key):
    AlbertConfig.from_dict(values)


def test_missing_vocab_and_missing_file(tmp_path):
  with pytest.raises(ValueError, match="vocab_size"):
    AlbertConfig.from_dict({"hidden_size": 8})
  with pytest.raises(FileNotFoundError):
    AlbertConfig.from_json_file(str(tmp_path / "nope.json"))
  bad = tmp_path / "bad.json"
  bad.write_text("{not json")
  with pytest.raises(ValueError, match="not valid JSON"):
    AlbertConfig.from_json_file(str(bad))


SMALL = dict(vocab_size=100, embedding_size=8, hidden_size=16, num_hidden_layers=2,
             num_attention_heads=2, intermediate_size=32)


def test_misspelt_key_in_a_file_names_both_keys_and_the_file(tmp_path):
  values = dict(SMALL)
  values["hidden_sise"] = values.pop("hidden_size")
  path = tmp_path / "albert_config.json"
  path.write_text(json.dumps(values))
  with pytest.raises(ValueError) as raised:
    AlbertConfig.from_json_file(str(path))
  assert str(raised.value) == (
      f"{path}: albert config: unknown key `hidden_sise`, did you mean `hidden_size`? "
      "(`hidden_size` would otherwise keep its default, 4096: rename the key)")


@pytest.mark.parametrize("key,field", [
    ("num_hidden_layer", "num_hidden_layers"), ("embeding_size", "embedding_size"),
    ("intializer_range", "initializer_range"), ("attention_dropout_prob",
                                                "attention_probs_dropout_prob")])
def test_misspelt_key_names_the_field_it_resembles(key, field):
  with pytest.raises(ValueError, match=f"unknown key `{key}`, did you mean `{field}`"):
    AlbertConfig.from_dict(dict(SMALL, **{key: 3}))


def test_misspelt_key_next_to_the_real_one():
  with pytest.raises(ValueError, match="`hidden_sise`, did you mean `hidden_size`.*given too"):
    AlbertConfig.from_dict(dict(SMALL, hidden_sise=8))


def test_unrelated_unknown_key_warns_and_is_written_back(tmp_path, caplog):
  with caplog.at_level(logging.WARNING):
    config = AlbertConfig.from_dict(dict(SMALL, trained_on="wiki+books"))
  assert [r.getMessage() for r in caplog.records] == [
      "albert config: unknown key `trained_on` is not used by the model (kept as it is)"]
  assert config.extra == {"trained_on": "wiki+books"} and config.hidden_size == 16
  config.to_json_file(str(tmp_path / "c.json"))
  assert json.loads((tmp_path / "c.json").read_text())["trained_on"] == "wiki+books"


@pytest.mark.parametrize("path", sorted(glob.glob(os.path.join(REPO_ROOT, "data", "configs",
                                                               "*.json")))
                         + [os.path.join(ORIGINAL_MODEL, "albert_config.json")])
def test_released_and_bundled_configs_load_without_warnings(path, caplog):
  with caplog.at_level(logging.WARNING):
    config = AlbertConfig.from_json_file(path)
  assert not caplog.records
  with open(path) as f:
    assert config.to_dict() == dict(config.to_dict(), **json.load(f))


@pytest.mark.parametrize("key,value", [
    ("initializer_range", True), ("hidden_dropout_prob", False),
    ("attention_probs_dropout_prob", False), ("initializer_range", "0.02"),
    ("hidden_dropout_prob", None), ("initializer_range", float("nan")),
    ("attention_probs_dropout_prob", 1.0), ("hidden_dropout_prob", -0.1)])
def test_float_fields_take_only_numbers(key, value):
  pattern = f"`{key}` must be a .*number.*, got {re.escape(repr(value))}$"
  with pytest.raises(ValueError, match=pattern):
    AlbertConfig.from_dict(dict(SMALL, **{key: value}))


def test_float_fields_take_ints_and_floats():
  config = AlbertConfig.from_dict(dict(SMALL, initializer_range=1, hidden_dropout_prob=0,
                                       attention_probs_dropout_prob=0.1))
  assert (config.initializer_range, config.hidden_dropout_prob,
          config.attention_probs_dropout_prob) == (1, 0, 0.1)
