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


def _position_nll(log_probs, positions):
  return -tf.gather(log_probs, tf.reshape(tf.cast(positions, tf.int32), [-1, 1]),
                    batch_dims=1)[:, 0]


def squad_example_losses(outputs, features, v2=False):
  """Per-example SQuAD loss of the original: the mean of the start and end cross-entropies; v2
  adds half the answerability sigmoid cross-entropy. [B]."""
  if v2:
    start_log_probs, end_log_probs = outputs["start_log_probs"], outputs["end_log_probs"]
  else:
    start_log_probs = tf.nn.log_softmax(outputs["start_logits"], axis=-1)
    end_log_probs = tf.nn.log_softmax(outputs["end_logits"], axis=-1)
  start_log_probs = tf.cast(start_log_probs, tf.float32)
  end_log_probs = tf.cast(end_log_probs, tf.float32)
  loss = 0.5 * (_position_nll(start_log_probs, features["start_positions"])
                + _position_nll(end_log_probs, features["end_positions"]))
  if v2:
    impossible = tf.cast(tf.reshape(features["is_impossible"], [-1]), tf.float32)
    loss += 0.5 * tf.nn.sigmoid_cross_entropy_with_logits(
        labels=impossible, logits=tf.cast(outputs["cls_logits"], tf.float32))
  return loss


class SquadObjective(MeanExampleLoss):
  """The original's SQuAD v1.1 / 2.0 training loss."""

  def __init__(self, v2=False):
    self.v2 = v2

  def per_example(self, outputs, features):
    return squad_example_losses(outputs, features, self.v2), {}
