"""The tagger's training loss: mean cross-entropy over the labelled first pieces of words."""

import tensorflow as tf

from albert_tf.training.runner import Objective


def token_losses(logits, label_ids, label_weights):
  """Per-position cross-entropy and argmax.

  Args:
    logits: float [B, T, num_labels].
    label_ids: int [B, T].
    label_weights: int or float [B, T]: 1 where a position counts (a word's first piece).

  Returns:
    (nll float32 [B, T] times the weights, predictions int32 [B, T], weights float32 [B, T]).
  """
  log_probs = tf.nn.log_softmax(tf.cast(logits, tf.float32), axis=-1)
  labels = tf.cast(label_ids, tf.int32)
  weights = tf.cast(label_weights, tf.float32)
  nll = -tf.gather(log_probs, labels[..., None], batch_dims=2)[..., 0]
  return nll * weights, tf.argmax(log_probs, axis=-1, output_type=tf.int32), weights


class TokenClassificationObjective(Objective):
  """The mean cross-entropy over every labelled position of the global batch (each word's
  first piece, once), so any split over replicas and micro-batches gives the same update."""

  def totals(self, features):
    return {"tokens": tf.reduce_sum(tf.cast(features["label_weights"], tf.float32))}

  def sums(self, outputs, features):
    nll, predictions, weights = token_losses(outputs["logits"], features["label_ids"],
                                             features["label_weights"])
    correct = tf.cast(tf.equal(predictions, tf.cast(features["label_ids"], tf.int32)),
                      tf.float32) * weights
    return {"loss_sum": tf.reduce_sum(nll), "correct": tf.reduce_sum(correct),
            "tokens": tf.reduce_sum(weights)}

  def loss(self, sums, totals):
    return sums["loss_sum"] / tf.maximum(totals["tokens"], 1.0)

  def metrics(self, sums):
    tokens = max(sums["tokens"], 1e-12)
    return {"train_loss": sums["loss_sum"] / tokens, "train_accuracy": sums["correct"] / tokens}
