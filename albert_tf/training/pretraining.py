"""Pretraining's objective (MLM + sentence order) on the shared training runner; the job behind
run_pretraining, which trains with it, is its task's (albert_tf.tasks.pretraining.job).

The sentence loss trains on whatever pairs the data holds: create_pretraining_data's default
pairs are sentence order (SOP: label 1 = the two segments swapped), with --random_next_sentence
next-sentence prediction (NSP: label 1 = segment B from another document). Its weight
(sentence_order_loss_weight) scales it; 0 leaves MLM alone (the paper's Table 5).

Losses are normalised over the whole global batch (every replica and micro-batch): the MLM loss is
sum(w * nll) / (sum(w) + 1e-5) and the SOP loss the mean over all examples, so an update equals
the original's single-device update on the same global batch, however it is split.
"""

import tensorflow as tf

from albert_tf.core import deprecation
from albert_tf.data.packing import is_packed
from albert_tf.models.losses import masked_lm_loss, sentence_order_loss
from albert_tf.training.runner import Objective, Runner

# The job moved to its task's folder; named as a string, so that this layer imports none above.
__getattr__ = deprecation.moved_names(__name__, {
    "PretrainingJob": "albert_tf.tasks.pretraining.job",
})


def metrics_from_sums(sums):
  """The original's eval metrics from summed quantities."""
  return {
      "masked_lm_accuracy": sums["mlm_correct"] / max(sums["mlm_weight"], 1e-12),
      "masked_lm_loss": sums["mlm_nll_sum"] / max(sums["mlm_weight"], 1e-12),
      "sentence_order_accuracy": sums["sop_correct"] / max(sums["examples"], 1e-12),
      "sentence_order_loss": sums["sop_nll_sum"] / max(sums["examples"], 1e-12),
  }


def _sequence_count(features):
  """The sequences of a batch: its rows, or the sequences packed into them."""
  if is_packed(features):
    return tf.reduce_sum(tf.cast(features["sequence_weights"], tf.float32))
  return tf.cast(tf.shape(features["input_ids"])[0], tf.float32)


# The sentence-order metrics: not trained (nor logged) at sentence_order_loss_weight 0.
_SOP_METRICS = ("sentence_order_accuracy", "sentence_order_loss")


class PretrainingObjective(Objective):
  """MLM + SOP with the original's per-example losses (models.losses), normalised globally.

  Args:
    sentence_order_loss_weight: float >= 0. The sentence loss's weight in the total (1.0, the
      original's). 0 trains the masked LM alone (the paper's Table 5 "None"): training logs and
      summaries then carry no sentence-order metrics; evaluation still reports them, as the
      paper's table does (an untrained head: chance accuracy).
  """

  def __init__(self, sentence_order_loss_weight: float = 1.0):
    self.sentence_order_loss_weight = sentence_order_loss_weight

  def totals(self, features):
    return {"mlm_weight": tf.reduce_sum(tf.cast(features["masked_lm_weights"], tf.float32)),
            "examples": _sequence_count(features)}

  def sums(self, outputs, features):
    _, mlm_nll, log_probs = masked_lm_loss(outputs["masked_lm_logits"], features["masked_lm_ids"],
                                           features["masked_lm_weights"])
    ids = tf.reshape(features["masked_lm_ids"], [-1])
    weights = tf.reshape(tf.cast(features["masked_lm_weights"], tf.float32), [-1])
    mlm_correct = tf.cast(tf.equal(tf.argmax(log_probs, -1, output_type=tf.int32), ids),
                          tf.float32)
    # Packed rows hold [B, K] sentence-order logits, one per sequence slot: their sums count the
    # slots that hold a sequence.
    _, sop_nll, sop_log_probs = sentence_order_loss(
        tf.reshape(outputs["sentence_order_logits"], [-1, 2]), features["next_sentence_labels"])
    labels = tf.reshape(features["next_sentence_labels"], [-1])
    sop_correct = tf.cast(tf.equal(tf.argmax(sop_log_probs, -1, output_type=tf.int32), labels),
                          tf.float32)
    if is_packed(features):
      sequences = tf.reshape(features["sequence_weights"], [-1])
      sop_nll, sop_correct = sequences * sop_nll, sequences * sop_correct
    return {
        "mlm_nll_sum": tf.reduce_sum(weights * mlm_nll),
        "mlm_correct": tf.reduce_sum(weights * mlm_correct),
        "mlm_weight": tf.reduce_sum(weights),
        "sop_nll_sum": tf.reduce_sum(sop_nll),
        "sop_correct": tf.reduce_sum(sop_correct),
        "examples": _sequence_count(features),
    }

  def loss(self, sums, totals):
    mlm = sums["mlm_nll_sum"] / (totals["mlm_weight"] + 1e-5)
    w = self.sentence_order_loss_weight
    if w == 0:
      return mlm  # not 0 * sop: a non-finite SOP loss would still poison the sum
    sop = sums["sop_nll_sum"] / totals["examples"]
    return mlm + (sop if w == 1 else w * sop)

  def metrics(self, sums):
    metrics = metrics_from_sums(sums)
    if self.sentence_order_loss_weight == 0:
      metrics = {k: v for k, v in metrics.items() if k not in _SOP_METRICS}
    return metrics

  def eval_metrics(self, sums):
    return metrics_from_sums(sums)


class PretrainingRunner(Runner):
  def __init__(self, strategy, model, optimizer, settings, loss_scale=None,
               sentence_order_loss_weight=1.0):
    super().__init__(strategy, model, optimizer, settings,
                     PretrainingObjective(sentence_order_loss_weight), loss_scale)
