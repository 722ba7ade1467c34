"""The original's learning-rate schedule: linear warmup, then polynomial decay to zero."""

import tensorflow as tf


def learning_rate_at(step, init_lr, num_train_steps, num_warmup_steps, poly_power=1.0,
                     start_warmup_step=0):
  """Learning rate of the update applied when `step` updates are already done (float32 scalar).

  decayed = init_lr * (1 - min(step, num_train_steps) / num_train_steps) ** poly_power;
  while step - start_warmup_step < num_warmup_steps it is replaced by
  init_lr * (step - start_warmup_step) / num_warmup_steps, as the original computes it.
  """
  step = tf.cast(step, tf.float32)
  total = float(max(num_train_steps, 1))
  progress = tf.minimum(step, total) / total
  decayed = init_lr * tf.pow(1.0 - progress, poly_power)
  if not num_warmup_steps:
    return decayed
  warm_step = tf.cast(tf.cast(step, tf.int32) - start_warmup_step, tf.float32)
  warmup_lr = init_lr * (warm_step / float(num_warmup_steps))
  is_warmup = tf.cast(warm_step < float(num_warmup_steps), tf.float32)
  return (1.0 - is_warmup) * decayed + is_warmup * warmup_lr
