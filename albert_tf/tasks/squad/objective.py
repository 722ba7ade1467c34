"""The original's SQuAD v1.1 / 2.0 training loss, as an Objective of the shared runner."""

import tensorflow as tf

from albert_tf.finetuning.objectives import MeanExampleLoss


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
