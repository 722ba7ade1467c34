"""LAMB / AdamW / schedule against the original's numbers and arithmetic."""

import json
import os

import numpy as np
import pytest
import tensorflow as tf

import albert_tf
from albert_tf.checkpoints.layout import original_variable_map
from albert_tf.models import pretraining_losses
from albert_tf.optimization import AdamWeightDecay, Lamb, create_optimizer, learning_rate_at
from albert_tf.core.settings import TrainSettings
from albert_tf.training.pretraining import PretrainingRunner
from helpers import ORIGINAL_MODEL


def test_schedule_matches_fixture_and_formula():
  with open(os.path.join(ORIGINAL_MODEL, "train_settings.json")) as f:
    expected = json.load(f)["train"]["learning_rate_of_each_update"]
  got = [float(learning_rate_at(t, 0.01, 4, 2)) for t in range(4)]
  np.testing.assert_allclose(got, expected, atol=1e-9)
  # poly_power and start_warmup_step, by the formula.
  np.testing.assert_allclose(float(learning_rate_at(6, 1.0, 10, 2, poly_power=2.0)), 0.16,
                             atol=1e-6)
  np.testing.assert_allclose(float(learning_rate_at(5, 1.0, 10, 4, start_warmup_step=3)), 0.5,
                             atol=1e-6)
  np.testing.assert_allclose(float(learning_rate_at(12, 1.0, 10, 0)), 0.0, atol=1e-7)


def _numpy_adam_update(w, g, m, v, lr, decay, lamb):
  m = 0.9 * m + 0.1 * g
  v = 0.999 * v + 0.001 * g * g
  u = m / (np.sqrt(v) + 1e-6)
  if decay:
    u = u + 0.01 * w
  ratio = 1.0
  if lamb:
    wn, un = np.linalg.norm(w), np.linalg.norm(u)
    ratio = wn / un if wn > 0 and un > 0 else 1.0
  return w - ratio * lr * u, m, v


@pytest.mark.parametrize("kind", ["lamb", "adamw"])
def test_update_arithmetic_and_exclusions(kind):
  rng = np.random.default_rng(3)
  values = {"bert/encoder/x/kernel": rng.normal(size=(3, 4)),
            "bert/encoder/x/bias": rng.normal(size=(4,)),
            "bert/embeddings/LayerNorm/gamma": rng.normal(size=(4,)),
            "bert/zero/kernel": np.zeros((2, 2))}
  variables = {n: tf.Variable(v.astype(np.float32)) for n, v in values.items()}
  opt = create_optimizer(kind)
  opt.build(list(variables.values()), {id(v): n for n, v in variables.items()})
  state = {n: (values[n].astype(np.float64), 0.0, 0.0) for n in values}
  for step in range(3):
    grads = {n: rng.normal(size=values[n].shape) for n in values}
    opt.apply_gradients([(tf.constant(grads[n], tf.float32), variables[n]) for n in values], 0.1)
    for n in values:
      excluded = "bias" in n or "LayerNorm" in n
      w, m, v = state[n]
      state[n] = _numpy_adam_update(w, grads[n], m, v, 0.1, not excluded,
                                    kind == "lamb" and not excluded)
      np.testing.assert_allclose(variables[n].numpy(), state[n][0], atol=1e-5, err_msg=n)
  assert opt.use_weight_decay("bert/encoder/x/kernel")
  assert not opt.use_weight_decay("cls/predictions/output_bias")
  assert not opt.use_weight_decay("bert/encoder/transformer/group_0/inner_group_0/LayerNorm_1/beta")


def test_lamb_excludes_layer_adaptation_like_decay_by_default():
  opt = Lamb()
  assert not opt.use_layer_adaptation("a/LayerNorm/gamma")
  assert opt.use_layer_adaptation("bert/embeddings/word_embeddings")
  assert not AdamWeightDecay().use_layer_adaptation("bert/embeddings/word_embeddings")
  with pytest.raises(ValueError, match="Not supported optimizer"):
    create_optimizer("sgd")


def _fixture_train_batch():
  features = {
      "input_ids": tf.io.FixedLenFeature([24], tf.int64),
      "input_mask": tf.io.FixedLenFeature([24], tf.int64),
      "segment_ids": tf.io.FixedLenFeature([24], tf.int64),
      "masked_lm_positions": tf.io.FixedLenFeature([5], tf.int64),
      "masked_lm_ids": tf.io.FixedLenFeature([5], tf.int64),
      "masked_lm_weights": tf.io.FixedLenFeature([5], tf.float32),
      "next_sentence_labels": tf.io.FixedLenFeature([1], tf.int64),
  }
  record = next(iter(tf.data.TFRecordDataset(os.path.join(ORIGINAL_MODEL, "train.tfrecord"))))
  example = tf.io.parse_single_example(record, features)
  cast = lambda t: tf.cast(t, tf.int32) if t.dtype == tf.int64 else t
  return {k: tf.stack([cast(v)] * 2) for k, v in example.items()}


def test_four_lamb_updates_reproduce_the_original():
  # The Runner run_pretraining trains with (schedule, clipping, LAMB), one update per call.
  config = albert_tf.AlbertConfig.from_json_file(os.path.join(ORIGINAL_MODEL, "albert_config.json"))
  model = albert_tf.AlbertPretrainer(config)
  optimizer = Lamb()
  runner = PretrainingRunner(tf.distribute.get_strategy(), model, optimizer, TrainSettings(
      learning_rate=0.01, num_train_steps=4, num_warmup_steps=2, iterations_per_loop=1))
  albert_tf.load_original_checkpoint(model, os.path.join(ORIGINAL_MODEL, "model.ckpt-0"))
  batch = _fixture_train_batch()
  iterator = iter(tf.data.Dataset.from_tensors(batch).repeat())
  losses = [runner.train_steps(iterator, 1)["loss"] for _ in range(4)]
  assert int(runner.global_step.numpy()) == 4
  losses.append(float(pretraining_losses(model(batch), batch)["total_loss"]))
  expected = np.load(os.path.join(ORIGINAL_MODEL, "reference.npz"))["train_losses"]
  np.testing.assert_allclose(losses, expected, atol=1e-5)
  reader = tf.train.load_checkpoint(os.path.join(ORIGINAL_MODEL, "model.ckpt-4"))
  slots = optimizer.slot_tensors()
  for name, var in original_variable_map(model).items():
    np.testing.assert_allclose(var.numpy(), reader.get_tensor(name), atol=1e-5, err_msg=name)
    for slot in ("adam_m", "adam_v"):
      np.testing.assert_allclose(slots[f"{name}/{slot}"], reader.get_tensor(f"{name}/{slot}"),
                                 atol=1e-5, err_msg=f"{name}/{slot}")
