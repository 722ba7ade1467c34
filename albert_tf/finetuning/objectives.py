"""Fine-tuning objectives for the shared training runner (training.runner)."""

import tensorflow as tf

from albert_tf.models.losses import classification_losses
from albert_tf.training.runner import Objective


class ClassificationObjective(Objective):
  """The original classifier's loss: the batch mean of the per-example cross-entropy (squared
  error for regression), here normalised by the global example count."""

  def __init__(self, regression=False):
    self.regression = regression

  def totals(self, features):
    return {"examples": tf.cast(tf.shape(features["input_ids"])[0], tf.float32)}

  def sums(self, outputs, features):
    out = classification_losses(outputs["logits"], features["label_ids"], self.regression)
    sums = {"loss_sum": tf.reduce_sum(out["per_example_loss"]),
            "examples": tf.cast(tf.size(out["per_example_loss"]), tf.float32)}
    if not self.regression:
      labels = tf.cast(tf.reshape(features["label_ids"], [-1]), tf.int32)
      sums["correct"] = tf.reduce_sum(tf.cast(tf.equal(out["predictions"], labels), tf.float32))
    return sums

  def loss(self, sums, totals):
    return sums["loss_sum"] / totals["examples"]

  def metrics(self, sums):
    n = max(sums["examples"], 1e-12)
    metrics = {"train_loss": sums["loss_sum"] / n}
    if "correct" in sums:
      metrics["train_accuracy"] = sums["correct"] / n
    return metrics
