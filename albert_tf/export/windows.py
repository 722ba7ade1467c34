"""The original's max-context rule in the graph: of the overlapping windows cut from one long
input (SQuAD's paragraph, NER's sentence), each position is predicted from the window where it has
the most context on both sides (min(left, right) + 0.01 x window length)."""

import tensorflow as tf


def max_context_window(windows):
  """For each example and position, the window giving it the most context (the first best, as
  the original's max-context rule): int64 [B, Lmax].

  Args:
    windows: {"start", "len": int [W] (each window's first position and length), "n_windows":
      int [B] (each example's window count; its windows in order)}.
  """
  by_example = lambda v: tf.RaggedTensor.from_row_lengths(v, windows["n_windows"]).to_tensor(
      default_value=0)
  start, length = by_example(windows["start"]), by_example(windows["len"])  # [B, K]
  max_len = tf.reduce_max(windows["start"] + windows["len"])
  pos = tf.range(max_len)[tf.newaxis, tf.newaxis, :]                          # [1, 1, L]
  start, length = start[:, :, tf.newaxis], length[:, :, tf.newaxis]
  end = start + length - 1
  inside = (pos >= start) & (pos <= end)
  score = (tf.cast(tf.minimum(pos - start, end - pos), tf.float64)
           + 0.01 * tf.cast(length, tf.float64))
  score = tf.where(inside, score, -1e9)
  return tf.argmax(score, axis=1)                                           # [B, L]
