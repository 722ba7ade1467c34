"""Optimizers and schedules with the original's arithmetic."""

import tensorflow as tf

from albert_tf.optimization.optimizers import AdamWeightDecay, Lamb, create_optimizer
from albert_tf.optimization.schedules import learning_rate_at


def clip_by_global_norm(grads, clip_norm=1.0):
  """The original clips every gradient by the global norm (1.0) before the update."""
  clipped, _ = tf.clip_by_global_norm(grads, clip_norm)
  return clipped
