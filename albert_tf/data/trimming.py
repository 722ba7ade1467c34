"""Batches cut to their longest real sequence, shared by the fine-tuning input (finetuning.inputs)
and the exports' raw-text signatures (export.saved_model), which sit on either side of the tasks:
both must trim alike so that served outputs equal the evaluated ones.

Trimming drops only padding columns (input_mask 0 in every row of the batch). Padded keys add
-10000 to the attention logits, which underflows to exactly 0 after the softmax, so the outputs
at real positions are the same as with full padding, up to float summation order.
"""

import tensorflow as tf

# The [..., T] features of every task's records: the ones a trimmed batch cuts.
SEQUENCE_FEATURES = ("input_ids", "input_mask", "segment_ids", "p_mask")
# Each example's record number, by which eval and predict outputs go back to file order.
EXAMPLE_INDEX = "example_index"


def trimmed_length(input_mask, max_seq_length, length_multiple=8):
  """The batch's longest real sequence rounded up to length_multiple (capped at max_seq_length).

  Rounding bounds the number of distinct shapes (each one is a separate trace / XLA compile).

  Args:
    input_mask: int [..., T].
    max_seq_length: the cap, T.
    length_multiple: what the length is rounded up to.

  Returns:
    int32 scalar (at least 1, for an empty batch).
  """
  longest = tf.reduce_max(tf.reduce_sum(tf.cast(input_mask, tf.int32), axis=-1))
  longest = tf.maximum(longest, 1)
  rounded = (longest + length_multiple - 1) // length_multiple * length_multiple
  return tf.minimum(rounded, max_seq_length)


# do_not_convert: tf.data traces map functions with autograph, which converts them (and what
# they call) at every pipeline build; their control flow is Python's or tf.while_loop.
@tf.autograph.experimental.do_not_convert
def trim_batch(batch, max_seq_length, length_multiple=8, sequence_features=SEQUENCE_FEATURES):
  """Cuts the [..., T] sequence features of a batch to trimmed_length positions.

  Args:
    batch: {name: tensor}, with input_mask [..., T].
    max_seq_length: T.
    length_multiple: see trimmed_length.
    sequence_features: the names cut to [..., L]; the others pass unchanged.
  """
  length = trimmed_length(batch["input_mask"], max_seq_length, length_multiple)
  return {name: (value[..., :length] if name in sequence_features else value)
          for name, value in batch.items()}
