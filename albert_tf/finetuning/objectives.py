"""Fine-tuning objectives for the shared training runner (training.runner).

Each is the original's batch-mean loss of a per-example loss, here normalised by the global
example count so that any split over replicas and micro-batches gives the same update.
"""

import tensorflow as tf

from albert_tf.models.losses import classification_losses
from albert_tf.training.runner import Objective


class MeanExampleLoss(Objective):
  """Subclasses give per_example(outputs, features) -> (losses [B], {name: count sums}); the
  counts are reported per example (e.g. correct -> train_correct / examples)."""

  def per_example(self, outputs, features):
    raise NotImplementedError

  def totals(self, features):
    return {"examples": tf.cast(tf.shape(features["input_ids"])[0], tf.float32)}

  def sums(self, outputs, features):
    losses, counts = self.per_example(outputs, features)
    return dict(counts, loss_sum=tf.reduce_sum(losses),
                examples=tf.cast(tf.size(losses), tf.float32))

  def loss(self, sums, totals):
    return sums["loss_sum"] / totals["examples"]

  def metrics(self, sums):
    n = max(sums["examples"], 1e-12)
    metrics = {"train_loss": sums["loss_sum"] / n}
    metrics.update({f"train_{k}": v / n for k, v in sums.items()
                    if k not in ("loss_sum", "examples", "loss", "learning_rate")})
    return metrics


class ClassificationObjective(MeanExampleLoss):
  """The original classifier's loss: cross-entropy (squared error for regression)."""

  def __init__(self, regression=False):
    self.regression = regression

  def per_example(self, outputs, features):
    out = classification_losses(outputs["logits"], features["label_ids"], self.regression)
    counts = {}
    if not self.regression:
      labels = tf.cast(tf.reshape(features["label_ids"], [-1]), tf.int32)
      counts["accuracy"] = tf.reduce_sum(tf.cast(tf.equal(out["predictions"], labels),
                                                 tf.float32))
    return out["per_example_loss"], counts
