"""The pretraining objective (MLM + sentence order) on the shared training runner.

Losses are normalised over the whole global batch (every replica and micro-batch): the MLM loss is
sum(w * nll) / (sum(w) + 1e-5) and the SOP loss the mean over all examples, so an update equals
the original's single-device update on the same global batch, however it is split.
"""

import tensorflow as tf

from albert_tf.models.losses import masked_lm_loss, sentence_order_loss
from albert_tf.training.runner import (  # noqa: F401  (the pretraining binary's names)
    NonFiniteLossError, Objective, Runner, TrainSettings, checkpoint_manager,
    install_sigterm_handler, restore_or_initialize, run_training)


def metrics_from_sums(sums):
  """The original's eval metrics from summed quantities."""
  return {
      "masked_lm_accuracy": sums["mlm_correct"] / max(sums["mlm_weight"], 1e-12),
      "masked_lm_loss": sums["mlm_nll_sum"] / max(sums["mlm_weight"], 1e-12),
      "sentence_order_accuracy": sums["sop_correct"] / max(sums["examples"], 1e-12),
      "sentence_order_loss": sums["sop_nll_sum"] / max(sums["examples"], 1e-12),
  }


class PretrainingObjective(Objective):
  """MLM + SOP with the original's per-example losses (models.losses), normalised globally."""

  def totals(self, features):
    return {"mlm_weight": tf.reduce_sum(tf.cast(features["masked_lm_weights"], tf.float32)),
            "examples": tf.cast(tf.shape(features["input_ids"])[0], tf.float32)}

  def sums(self, outputs, features):
    _, mlm_nll, log_probs = masked_lm_loss(outputs["masked_lm_logits"], features["masked_lm_ids"],
                                           features["masked_lm_weights"])
    ids = tf.reshape(features["masked_lm_ids"], [-1])
    weights = tf.reshape(tf.cast(features["masked_lm_weights"], tf.float32), [-1])
    mlm_correct = tf.cast(tf.equal(tf.argmax(log_probs, -1, output_type=tf.int32), ids),
                          tf.float32)
    _, sop_nll, sop_log_probs = sentence_order_loss(outputs["sentence_order_logits"],
                                                    features["next_sentence_labels"])
    labels = tf.reshape(features["next_sentence_labels"], [-1])
    sop_correct = tf.cast(tf.equal(tf.argmax(sop_log_probs, -1, output_type=tf.int32), labels),
                          tf.float32)
    return {
        "mlm_nll_sum": tf.reduce_sum(weights * mlm_nll),
        "mlm_correct": tf.reduce_sum(weights * mlm_correct),
        "mlm_weight": tf.reduce_sum(weights),
        "sop_nll_sum": tf.reduce_sum(sop_nll),
        "sop_correct": tf.reduce_sum(sop_correct),
        "examples": tf.cast(tf.size(sop_nll), tf.float32),
    }

  def loss(self, sums, totals):
    return (sums["mlm_nll_sum"] / (totals["mlm_weight"] + 1e-5)
            + sums["sop_nll_sum"] / totals["examples"])

  def metrics(self, sums):
    return metrics_from_sums(sums)


class PretrainingRunner(Runner):
  def __init__(self, strategy, model, optimizer, settings, loss_scale=None):
    super().__init__(strategy, model, optimizer, settings, PretrainingObjective(), loss_scale)
