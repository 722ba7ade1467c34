"""The SQuAD and RACE heads against NumPy re-statements of the original's graphs
(squad_utils.create_v1_model / create_v2_model, race_utils.create_model), and their checkpoint
layout."""

import os

import numpy as np
import pytest
import tensorflow as tf

import albert_tf
from albert_tf.checkpoints.layout import original_variable_map
from albert_tf.tasks.squad.objective import squad_example_losses
from albert_tf.tasks.squad.heads import SquadV2Head
from helpers import ORIGINAL_MODEL, read_tf1_checkpoint

CONFIG = os.path.join(ORIGINAL_MODEL, "albert_config.json")
B, T, H = 3, 12, 8


def _log_softmax(x):
  x = x - x.max(-1, keepdims=True)
  return x - np.log(np.exp(x).sum(-1, keepdims=True))


def _layer_norm(x, gamma, beta):
  mean = x.mean(-1, keepdims=True)
  var = ((x - mean) ** 2).mean(-1, keepdims=True)
  return (x - mean) / np.sqrt(var + 1e-12) * gamma + beta


@pytest.fixture(scope="module")
def head_and_inputs():
  rng = np.random.default_rng(0)
  head = SquadV2Head(H, start_n_top=3, end_n_top=2, dropout_rate=0.0, initializer_range=0.5)
  head.build()
  for v in head.weights:  # non-trivial biases and LayerNorm parameters too
    v.assign(rng.normal(0, 0.5, v.shape).astype(np.float32))
  seq = rng.normal(size=(B, T, H)).astype(np.float32)
  p_mask = np.ones((B, T), np.float32)
  p_mask[:, 0] = 0
  p_mask[:, 4:10] = 0
  p_mask[2, 6:] = 1
  return head, seq, p_mask


def _reference(head, seq, p_mask, start_positions=None):
  """The original's v2 head, written out in NumPy."""
  w = {v.path.split("/")[-2] + "/" + v.path.split("/")[-1]: v.numpy() for v in head.weights}
  dense = lambda x, name: x @ w[f"{name}/kernel"] + w.get(f"{name}/bias", 0)
  start_logits = dense(seq, "start_dense")[..., 0]
  start_masked = start_logits * (1 - p_mask) - 1e30 * p_mask
  start_lp = _log_softmax(start_masked)

  def end_lp(start_state):  # start_state [B, H]
    x = np.concatenate([seq, np.repeat(start_state[:, None], T, 1)], -1)
    x = np.tanh(dense(x, "end_dense_0"))
    x = _layer_norm(x, w["end_layer_norm/gamma"], w["end_layer_norm/beta"])
    logits = dense(x, "end_dense_1")[..., 0]
    return _log_softmax(logits * (1 - p_mask) - 1e30 * p_mask)

  out = {}
  if start_positions is not None:
    out["start_log_probs"] = start_lp
    out["end_log_probs"] = end_lp(seq[np.arange(B), start_positions])
  else:
    top = np.argsort(-start_lp, axis=1, kind="stable")[:, :3]
    out["start_top_index"] = top
    out["start_top_log_probs"] = np.take_along_axis(start_lp, top, 1)
    ends, end_lps = [], []
    for k in range(3):
      lp = end_lp(seq[np.arange(B), top[:, k]])
      idx = np.argsort(-lp, axis=1, kind="stable")[:, :2]
      ends.append(idx)
      end_lps.append(np.take_along_axis(lp, idx, 1))
    out["end_top_index"] = np.concatenate(ends, 1)
    out["end_top_log_probs"] = np.concatenate(end_lps, 1)
  start_p = np.exp(start_lp)
  feature = np.concatenate([(seq * start_p[..., None]).sum(1), seq[:, 0]], -1)
  out["cls_logits"] = (np.tanh(dense(feature, "answer_dense_0"))
                       @ w["answer_dense_1/kernel"])[:, 0]
  return out


@pytest.mark.parametrize("training", [False, True])
def test_v2_head_equals_the_original_equations(head_and_inputs, training):
  head, seq, p_mask = head_and_inputs
  starts = np.array([4, 9, 5]) if training else None
  ours = head(tf.constant(seq), tf.constant(p_mask), starts, training=training)
  theirs = _reference(head, seq, p_mask, starts)
  assert set(ours) == set(theirs)
  for key, value in theirs.items():
    np.testing.assert_allclose(ours[key], value, atol=2e-5, err_msg=key)


def test_v2_layout_and_round_trip(tmp_path):
  config = albert_tf.AlbertConfig.from_json_file(CONFIG)
  model = albert_tf.AlbertSquadV2(config, start_n_top=2, end_n_top=2)
  heads = sorted(n for n in original_variable_map(model) if not n.startswith("bert/"))
  assert heads == sorted([
      "start_logits/dense/kernel", "start_logits/dense/bias", "end_logits/dense_0/kernel",
      "end_logits/dense_0/bias", "end_logits/LayerNorm/gamma", "end_logits/LayerNorm/beta",
      "end_logits/dense_1/kernel", "end_logits/dense_1/bias", "answer_class/dense_0/kernel",
      "answer_class/dense_0/bias", "answer_class/dense_1/kernel"])
  prefix = albert_tf.save_original_checkpoint(model, str(tmp_path / "model.ckpt-3"))
  written = read_tf1_checkpoint(prefix)
  assert written["end_logits/dense_0/kernel"].shape == (64, 32)
  again = albert_tf.AlbertSquadV2(config, start_n_top=2, end_n_top=2)
  report = albert_tf.load_original_checkpoint(again, prefix)
  assert not report.missing and not report.unused
  rng = np.random.default_rng(1)
  inputs = {"input_ids": rng.integers(5, 900, (2, 16)).astype(np.int32),
            "p_mask": np.zeros((2, 16), np.int32)}
  a, b = model(inputs), again(inputs)
  for key in ("start_top_log_probs", "end_top_log_probs", "cls_logits"):
    np.testing.assert_array_equal(a[key], b[key])


def test_v1_span_logits_and_layout():
  config = albert_tf.AlbertConfig.from_json_file(CONFIG)
  model = albert_tf.AlbertSpanLabeler(config)
  albert_tf.load_checkpoint(model, os.path.join(ORIGINAL_MODEL, "model.ckpt-0"))
  names = original_variable_map(model)
  assert names["cls/squad/output_weights"].shape == (2, 32)
  inputs = {"input_ids": np.arange(5, 25, dtype=np.int32).reshape(2, 10)}
  out = model(inputs)
  seq = out["sequence_output"].numpy()
  logits = seq @ names["cls/squad/output_weights"].numpy().T + names[
      "cls/squad/output_bias"].numpy()
  np.testing.assert_allclose(out["start_logits"], logits[..., 0], atol=1e-6)
  np.testing.assert_allclose(out["end_logits"], logits[..., 1], atol=1e-6)


def test_squad_losses():
  rng = np.random.default_rng(2)
  start, end = rng.normal(size=(2, 6)).astype(np.float32), rng.normal(size=(2, 6)).astype(
      np.float32)
  features = {"start_positions": np.array([1, 4]), "end_positions": np.array([2, 5]),
              "is_impossible": np.array([0, 1])}
  v1 = squad_example_losses({"start_logits": start, "end_logits": end}, features)
  expected = -0.5 * (_log_softmax(start)[[0, 1], [1, 4]] + _log_softmax(end)[[0, 1], [2, 5]])
  np.testing.assert_allclose(v1, expected, atol=1e-6)
  cls = np.array([0.3, -1.2], np.float32)
  v2 = squad_example_losses({"start_log_probs": _log_softmax(start),
                             "end_log_probs": _log_softmax(end), "cls_logits": cls}, features,
                            v2=True)
  bce = np.log1p(np.exp(-np.abs(cls))) + np.maximum(cls, 0) - cls * np.array([0, 1])
  np.testing.assert_allclose(v2, expected + 0.5 * bce, atol=1e-6)


def test_multiple_choice_scores_each_choice_with_the_classifier_layer():
  config = albert_tf.AlbertConfig.from_json_file(CONFIG)
  model = albert_tf.AlbertMultipleChoice(config, num_choices=4, dropout_rate=0.0)
  assert original_variable_map(model)["output_weights"].shape == (1, 32)
  rng = np.random.default_rng(3)
  ids = rng.integers(5, 900, (2, 4, 10)).astype(np.int32)
  logits = model({"input_ids": ids, "input_mask": np.ones_like(ids),
                  "segment_ids": np.zeros_like(ids)})["logits"]
  assert logits.shape == (2, 4)
  single = albert_tf.AlbertClassifier(config, 1, dropout_rate=0.0)
  for a, b in zip(single.weights, model.weights):
    a.assign(b)
  flat = single({"input_ids": ids.reshape(8, 10)})["logits"].numpy().reshape(2, 4)
  np.testing.assert_allclose(logits, flat, atol=1e-6)
