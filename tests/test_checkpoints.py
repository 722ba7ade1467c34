"""Original-layout checkpoints: loading, writing, errors."""

import os

import numpy as np
import pytest
import tensorflow as tf

import albert_tf
import numpy_reference as ref
from albert_tf.checkpoints import layout
from helpers import ORIGINAL_MODEL, read_tf1_checkpoint, write_tf1_checkpoint

FIXTURE_CKPT = os.path.join(ORIGINAL_MODEL, "model.ckpt-0")


def _fixture_config(**changes):
  config = albert_tf.AlbertConfig.from_json_file(os.path.join(ORIGINAL_MODEL, "albert_config.json"))
  return config.replace(**changes) if changes else config


def test_save_then_load_is_bit_exact_with_fixture_names(tmp_path):
  model = albert_tf.AlbertPretrainer(_fixture_config())
  albert_tf.load_original_checkpoint(model, FIXTURE_CKPT)
  prefix = albert_tf.save_original_checkpoint(model, str(tmp_path / "model.ckpt-best"))

  fixture = tf.train.load_checkpoint(FIXTURE_CKPT).get_variable_to_shape_map()
  fixture = {n: s for n, s in fixture.items() if not n.endswith(("/adam_m", "/adam_v"))}
  written = tf.train.load_checkpoint(prefix).get_variable_to_shape_map()
  assert written == fixture  # names and shapes, global_step included

  fresh = albert_tf.AlbertPretrainer(_fixture_config())
  albert_tf.load_original_checkpoint(fresh, str(tmp_path))  # the directory form
  for (name, a), b in zip(layout.original_variable_map(model).items(),
                          layout.original_variable_map(fresh).values()):
    np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=name)
  original = read_tf1_checkpoint(FIXTURE_CKPT)
  for name, value in read_tf1_checkpoint(prefix).items():
    np.testing.assert_array_equal(value, original[name], err_msg=name)
  assert not [f for f in os.listdir(tmp_path) if f.startswith(".tmp")]


def test_encoder_only_model_reports_unused_heads():
  model = albert_tf.AlbertModel(_fixture_config())
  report = albert_tf.load_original_checkpoint(model, FIXTURE_CKPT)
  assert not report.missing
  assert report.unused == sorted(n for n in read_tf1_checkpoint(FIXTURE_CKPT)
                                 if n.startswith("cls/") and not n.endswith(("adam_m", "adam_v")))


def test_shape_mismatch_names_variable_and_shapes():
  model = albert_tf.AlbertModel(_fixture_config(vocab_size=999))
  with pytest.raises(ValueError, match=r"bert/embeddings/word_embeddings.*\[1000, 16\].*\[999, 16\]"):
    albert_tf.load_original_checkpoint(model, FIXTURE_CKPT)


def test_missing_encoder_variables_are_named():
  model = albert_tf.AlbertModel(_fixture_config(num_hidden_groups=2))
  with pytest.raises(KeyError, match="group_1/inner_group_0"):
    albert_tf.load_original_checkpoint(model, FIXTURE_CKPT)


def test_init_from_group0():
  model = albert_tf.AlbertModel(_fixture_config(num_hidden_groups=3, inner_group_num=1))
  report = albert_tf.load_original_checkpoint(model, FIXTURE_CKPT, init_from_group0=True)
  assert not report.missing and len(report.from_group0) == 2 * 16
  g = model.transformer.groups
  np.testing.assert_array_equal(g[2][0].intermediate.kernel.numpy(),
                                g[0][0].intermediate.kernel.numpy())
  reader = tf.train.load_checkpoint(FIXTURE_CKPT)
  np.testing.assert_array_equal(
      g[1][0].attention.query.kernel.numpy(),
      reader.get_tensor("bert/encoder/transformer/group_0/inner_group_0/attention_1/self/query/kernel"))


def test_missing_heads_are_reported_not_fatal(tmp_path):
  cfg = dict(vocab_size=30, embedding_size=8, hidden_size=8, num_hidden_layers=1,
             num_attention_heads=2, intermediate_size=8, max_position_embeddings=8,
             type_vocab_size=2, num_hidden_groups=1, inner_group_num=1)
  weights = ref.random_weights(cfg, np.random.default_rng(0), with_heads=False)
  prefix = write_tf1_checkpoint(str(tmp_path / "enc"), dict(weights, **{
      "bert/embeddings/word_embeddings/adam_m": weights["bert/embeddings/word_embeddings"],
      "global_step": np.int64(3)}))
  model = albert_tf.AlbertPretrainer(albert_tf.AlbertConfig.from_dict(cfg))
  report = albert_tf.load_original_checkpoint(model, prefix)
  assert all(n.startswith("cls/") for n in report.missing) and len(report.missing) == 7
  assert report.unused == []


def test_bad_paths(tmp_path):
  model = albert_tf.AlbertModel(_fixture_config())
  with pytest.raises(FileNotFoundError, match="checkpoint not found"):
    albert_tf.load_original_checkpoint(model, str(tmp_path / "model.ckpt-1"))
  with pytest.raises(FileNotFoundError, match="no checkpoint found in directory"):
    albert_tf.load_original_checkpoint(model, str(tmp_path))


def test_our_checkpoints_hold_every_weight_and_load_into_encoder_or_pretrainer(tmp_path):
  config = _fixture_config(num_hidden_groups=2, inner_group_num=2)
  model = albert_tf.AlbertPretrainer(config)
  parts = albert_tf.checkpoints.model_parts(model)
  prefix = tf.train.Checkpoint(**parts).write(str(tmp_path / "ours"))
  saved = [n for n, _ in tf.train.list_variables(prefix) if n.endswith("VARIABLE_VALUE")]
  assert len(saved) == len(model.trainable_variables) == 80
  assert not albert_tf.checkpoints.is_original_layout(prefix)

  encoder = albert_tf.AlbertModel(config)
  albert_tf.load_checkpoint(encoder, prefix)
  pretrainer = albert_tf.AlbertPretrainer(config)
  albert_tf.load_checkpoint(pretrainer, prefix)
  source = layout.original_variable_map(model)
  for target in (layout.original_variable_map(encoder), layout.original_variable_map(pretrainer)):
    for name, var in target.items():
      np.testing.assert_array_equal(var.numpy(), source[name].numpy(), err_msg=name)
  # The original layout is detected too.
  report = albert_tf.load_checkpoint(albert_tf.AlbertModel(_fixture_config()), FIXTURE_CKPT)
  assert isinstance(report, albert_tf.checkpoints.LoadReport) and not report.missing
