import json
import os

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
