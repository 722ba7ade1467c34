"""Configurations beyond the fixture's, against the NumPy reference, through original-layout
checkpoints written without albert_tf."""

import numpy as np
import pytest
import tensorflow as tf

import albert_tf
import numpy_reference as ref
from helpers import write_tf1_checkpoint

BASE = dict(vocab_size=50, embedding_size=8, hidden_size=16, num_hidden_layers=3,
            num_hidden_groups=1, num_attention_heads=4, intermediate_size=24, inner_group_num=1,
            hidden_act="gelu", max_position_embeddings=20, type_vocab_size=2)

VARIANTS = {
    "groups": dict(num_hidden_layers=4, num_hidden_groups=3),
    "inner_groups": dict(inner_group_num=2, num_hidden_layers=2),
    "groups_and_inner": dict(num_hidden_layers=5, num_hidden_groups=2, inner_group_num=3),
    "one_group_per_layer": dict(num_hidden_layers=3, num_hidden_groups=3),
    "e_equals_h": dict(embedding_size=16),
    "relu": dict(hidden_act="relu"),
    "tanh": dict(hidden_act="tanh"),
    "type_vocab_3": dict(type_vocab_size=3),
    "type_vocab_1": dict(type_vocab_size=1),
}


def _inputs(cfg, rng, batch=3, length=11):
  ids = rng.integers(0, cfg["vocab_size"], size=(batch, length)).astype(np.int32)
  mask = np.ones((batch, length), np.int32)
  mask[1, 7:] = 0
  mask[2, 4:] = 0
  segments = rng.integers(0, cfg["type_vocab_size"], size=(batch, length)).astype(np.int32)
  positions = rng.integers(0, length, size=(batch, 4)).astype(np.int32)
  return ids, mask, segments, positions


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_variant_matches_reference(variant, tmp_path):
  cfg = dict(BASE, **VARIANTS[variant])
  rng = np.random.default_rng(sorted(VARIANTS).index(variant))
  weights = ref.random_weights(cfg, rng)
  prefix = write_tf1_checkpoint(str(tmp_path / "model.ckpt-7"), weights)

  model = albert_tf.AlbertPretrainer(albert_tf.AlbertConfig.from_dict(cfg))
  report = albert_tf.load_original_checkpoint(model, prefix)
  assert sorted(report.loaded) == sorted(weights) and not report.missing and not report.unused

  ids, mask, segments, positions = _inputs(cfg, rng)
  out = model({"input_ids": ids, "input_mask": mask, "segment_ids": segments,
               "masked_lm_positions": positions})
  want = ref.forward(weights, cfg, ids, mask, segments, positions)
  np.testing.assert_allclose(out["embedding_output"], want["embedding_output"], atol=1e-5)
  expected_blocks = cfg["num_hidden_layers"] * cfg["inner_group_num"]
  assert len(out["encoder_outputs"]) == len(want["encoder_outputs"]) == expected_blocks
  for ours, theirs in zip(out["encoder_outputs"], want["encoder_outputs"]):
    np.testing.assert_allclose(ours, theirs, atol=1e-4)
  np.testing.assert_allclose(out["pooled_output"], want["pooled_output"], atol=1e-4)
  np.testing.assert_allclose(tf.nn.log_softmax(out["masked_lm_logits"]),
                             want["masked_lm_log_probs"], atol=1e-4)
  np.testing.assert_allclose(tf.nn.log_softmax(out["sentence_order_logits"]),
                             want["sentence_order_log_probs"], atol=1e-4)

  # And back out in the original layout: bit-exact, same names.
  saved = albert_tf.save_original_checkpoint(model, str(tmp_path / "out" / "model.ckpt-0"))
  reader = tf.train.load_checkpoint(saved)
  for name, value in weights.items():
    np.testing.assert_array_equal(reader.get_tensor(name), value)
  assert set(reader.get_variable_to_shape_map()) == set(weights) | {"global_step"}


def test_e_equals_h_has_no_projection():
  model = albert_tf.AlbertModel(albert_tf.AlbertConfig.from_dict(dict(BASE, embedding_size=16)))
  assert model.embedding_projection is None
  names = albert_tf.checkpoints.original_variable_map(model)
  assert not any("embedding_hidden_mapping_in" in n for n in names)


def test_defaults_for_mask_and_segments():
  cfg = albert_tf.AlbertConfig.from_dict(BASE)
  model = albert_tf.AlbertModel(cfg)
  ids = np.array([[3, 4, 5, 6]], np.int32)
  full = model({"input_ids": ids, "input_mask": np.ones_like(ids),
                "segment_ids": np.zeros_like(ids)})
  default = model({"input_ids": ids})
  np.testing.assert_array_equal(full["sequence_output"], default["sequence_output"])


def test_any_batch_and_length_and_too_long():
  cfg = albert_tf.AlbertConfig.from_dict(BASE)
  model = albert_tf.AlbertModel(cfg)
  for batch, length in ((1, 1), (5, 20), (2, 13)):
    out = model({"input_ids": np.ones((batch, length), np.int32)})
    assert out["sequence_output"].shape == (batch, length, 16)
    assert out["pooled_output"].shape == (batch, 16)
  with pytest.raises(ValueError, match="max_position_embeddings"):
    model({"input_ids": np.ones((1, 21), np.int32)})

  @tf.function(input_signature=[tf.TensorSpec([None, None], tf.int32)])
  def dynamic(ids):
    return model({"input_ids": ids})["pooled_output"]
  assert dynamic(tf.ones([2, 20], tf.int32)).shape == (2, 16)
  with pytest.raises(tf.errors.InvalidArgumentError, match="max_position_embeddings"):
    dynamic(tf.ones([2, 21], tf.int32))


def test_dropout_only_when_training():
  cfg = albert_tf.AlbertConfig.from_dict(dict(BASE, hidden_dropout_prob=0.3,
                                              attention_probs_dropout_prob=0.3))
  model = albert_tf.AlbertModel(cfg)
  ids = np.arange(12, dtype=np.int32).reshape(2, 6)
  a = model({"input_ids": ids})["sequence_output"]
  b = model({"input_ids": ids})["sequence_output"]
  np.testing.assert_array_equal(a, b)
  c = model({"input_ids": ids}, training=True)["sequence_output"]
  assert np.abs(np.asarray(a) - np.asarray(c)).max() > 1e-3


def test_model_config_round_trip():
  model = albert_tf.AlbertPretrainer(albert_tf.AlbertConfig.from_dict(BASE))
  clone = albert_tf.AlbertPretrainer.from_config(model.get_config())
  assert clone.config == model.config
  assert clone.count_params() == model.count_params()
