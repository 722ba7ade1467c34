"""The model loaded from the original's checkpoint reproduces the original graph's outputs."""

import json
import os

import numpy as np
import pytest

import albert_tf
from albert_tf.models import pretraining_losses
from helpers import ORIGINAL_MODEL, reference_batch

ATOL = 1e-5


@pytest.fixture(scope="module")
def outputs():
  config = albert_tf.AlbertConfig.from_json_file(os.path.join(ORIGINAL_MODEL, "albert_config.json"))
  model = albert_tf.AlbertPretrainer(config)
  report = albert_tf.load_original_checkpoint(model, os.path.join(ORIGINAL_MODEL, "model.ckpt-0"))
  assert not report.missing and not report.unused
  ref = reference_batch()
  inputs = {k: ref[k] for k in ("input_ids", "input_mask", "segment_ids", "masked_lm_positions")}
  out = model(inputs)
  losses = pretraining_losses(out, ref)
  return ref, out, losses


def test_embedding_and_every_encoder_layer(outputs):
  ref, out, _ = outputs
  np.testing.assert_allclose(out["embedding_output"], ref["embedding_output"], atol=ATOL)
  assert len(out["encoder_outputs"]) == ref["all_encoder_layers"].shape[0]
  for ours, theirs in zip(out["encoder_outputs"], ref["all_encoder_layers"]):
    np.testing.assert_allclose(ours, theirs, atol=ATOL)


def test_sequence_output_on_real_tokens_and_pooled(outputs):
  ref, out, _ = outputs
  real = ref["input_mask"].astype(bool)
  np.testing.assert_allclose(np.asarray(out["sequence_output"])[real],
                             ref["sequence_output"][real], atol=ATOL)
  np.testing.assert_allclose(out["pooled_output"], ref["pooled_output"], atol=ATOL)


@pytest.mark.parametrize("key", ["masked_lm_log_probs", "masked_lm_example_loss",
                                 "sentence_order_log_probs", "sentence_order_example_loss",
                                 "masked_lm_loss", "sentence_order_loss"])
def test_heads_and_losses(outputs, key):
  ref, _, losses = outputs
  np.testing.assert_allclose(losses[key], ref[key], atol=ATOL)


def test_eval_metrics_of_original(outputs):
  ref, _, losses = outputs
  with open(os.path.join(ORIGINAL_MODEL, "train_settings.json")) as f:
    expected = json.load(f)["eval_metrics_at_ckpt_0"]
  w = ref["masked_lm_weights"].reshape(-1)
  pred = np.argmax(losses["masked_lm_log_probs"], -1)
  mlm_acc = (w * (pred == ref["masked_lm_ids"].reshape(-1))).sum() / w.sum()
  mlm_loss = (w * np.asarray(losses["masked_lm_example_loss"])).sum() / w.sum()
  sop_pred = np.argmax(losses["sentence_order_log_probs"], -1)
  sop_acc = (sop_pred == ref["next_sentence_labels"].reshape(-1)).mean()
  np.testing.assert_allclose(mlm_acc, expected["masked_lm_accuracy"], atol=ATOL)
  np.testing.assert_allclose(mlm_loss, expected["masked_lm_loss"], atol=ATOL)
  np.testing.assert_allclose(sop_acc, expected["sentence_order_accuracy"], atol=ATOL)
  np.testing.assert_allclose(np.mean(losses["sentence_order_example_loss"]),
                             expected["sentence_order_loss"], atol=ATOL)


def test_base_parameter_count():
  model = albert_tf.AlbertModel(albert_tf.AlbertConfig.from_preset("base"))
  assert model.count_params() == 11_683_584
