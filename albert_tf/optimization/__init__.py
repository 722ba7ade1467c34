"""Optimizers, schedule and gradient clipping with the original's arithmetic."""

import tensorflow as tf

from albert_tf.optimization.optimizers import AdamWeightDecay, Lamb, create_optimizer
from albert_tf.optimization.schedules import learning_rate_at


def densify(grads: list) -> tuple[list, list]:
  """Dense gradients, plus for each gradient that came as IndexedSlices (an embedding gather) the
  sum of squares of its slices *before* duplicate rows are summed (None for dense ones).

  tf.clip_by_global_norm measures an IndexedSlices by its unsummed slices; the original clips
  such gradients so, and its updates depend on it. Keeping that square sum lets us clip dense,
  accumulated or all-reduced gradients exactly as the original clips the raw ones.

  Args:
    grads: list of gradients, each a tensor or tf.IndexedSlices.

  Returns:
    (dense gradients, square sums): two lists as long as `grads`; a square sum is a float32
    scalar for an IndexedSlices gradient, None for a dense one.
  """
  dense, sparse_sq = [], []
  for g in grads:
    if isinstance(g, tf.IndexedSlices):
      sparse_sq.append(tf.reduce_sum(tf.square(tf.cast(g.values, tf.float32))))
      dense.append(tf.convert_to_tensor(g))
    else:
      sparse_sq.append(None)
      dense.append(g)
  return dense, sparse_sq


def clip_by_global_norm(grads: list, clip_norm: float = 1.0, sparse_sq: list | None = None) -> list:
  """Scales gradients by clip_norm / max(global norm, clip_norm), as tf.clip_by_global_norm
  (the original clips at 1.0 before its optimizers). IndexedSlices are measured unsummed.

  Args:
    grads: list of gradients (tensors or IndexedSlices); with `sparse_sq`, the dense gradients
      `densify` returned.
    clip_norm: float. The largest global norm kept.
    sparse_sq: the square sums `densify` returned with `grads`; None densifies `grads` here.

  Returns:
    The clipped dense gradients, in `grads`' order and dtypes.
  """
  if sparse_sq is None:
    grads, sparse_sq = densify(grads)
  terms = [sq if sq is not None else tf.reduce_sum(tf.square(tf.cast(g, tf.float32)))
           for g, sq in zip(grads, sparse_sq)]
  norm = tf.sqrt(tf.add_n(terms))
  scale = clip_norm * tf.minimum(1.0 / norm, 1.0 / clip_norm)
  return [g * tf.cast(scale, g.dtype) for g in grads]
