"""The original's learning-rate schedule: linear warmup, then polynomial decay to zero."""

import tensorflow as tf


def learning_rate_at(step, init_lr: float, num_train_steps: int, num_warmup_steps: int,
                     poly_power: float = 1.0, start_warmup_step: int = 0) -> tf.Tensor:
  """Learning rate of the update applied when `step` updates are already done.

  decayed = init_lr * (1 - min(step, num_train_steps) / num_train_steps) ** poly_power;
  while step - start_warmup_step < num_warmup_steps it is replaced by
  init_lr * (step - start_warmup_step) / num_warmup_steps, as the original computes it.

  Args:
    step: int or int tensor scalar, the number of updates already applied.
    init_lr: float. The peak learning rate.
    num_train_steps: int. The step at which the rate reaches 0 (taken as at least 1).
    num_warmup_steps: int. The length of the linear warmup (0 or None: no warmup).
    poly_power: float. The power of the decay (1.0: linear).
    start_warmup_step: int. The step at which warmup starts.

  Returns:
    float32 scalar tensor.

  Example:

  >>> from albert_tf.optimization import learning_rate_at
  >>> [round(float(learning_rate_at(s, 1e-3, 100, 10)), 6) for s in (0, 5, 10, 55, 100)]
  [0.0, 0.0005, 0.0009, 0.00045, 0.0]
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
