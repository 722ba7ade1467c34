"""Packed sequences: several of create_pretraining_data's sequences in one row of max_seq_length.

A record of create_pretraining_data holds one sequence, its real tokens first, then padding. A
window of records is packed by first-fit decreasing: the longest sequence first, each into the
first row where it fits (at most `max_sequences_per_row` sequences a row, their lengths summing
to at most T). Within a row each sequence keeps its own tokens, token types, masked positions and
sentence-order label; its positions restart at 0, and `sequence_ids` tells the encoder to let it
attend to itself alone (AlbertModel: a block-diagonal attention mask), so that every sequence's
outputs are those it has unpacked.

A packed row (T = max_seq_length, K = max_sequences_per_row, P = max_predictions_per_seq):

  input_ids, input_mask, segment_ids  int [T]     the sequences one after another, then padding
  position_ids                        int [T]     each token's position in its own sequence
  sequence_ids                        int [T]     k on the k-th sequence's tokens (1..K), 0 on
                                                  padding
  masked_lm_positions, masked_lm_ids  int [K*P]   sequence k's predictions at k*P .. k*P + P - 1,
  masked_lm_weights                   float [K*P] its positions moved to where it lies in the row
  next_sentence_labels                int [K]     each sequence's label (0 for an empty slot)
  sequence_starts                     int [K]     where each sequence starts (its [CLS])
  sequence_weights                    float [K]   1 for a sequence, 0 for an empty slot

Packing is deterministic (it depends on the window's records alone), so a seeded stream is the
same packed stream every time, and a file packs into the same number of rows every epoch.
"""

import numpy as np
import tensorflow as tf

# Records packed together (first-fit decreasing over a window), shared with the TensorFlow-free
# padding report that predicts the rows.
from albert_tf.data.padding import PACKING_WINDOW
from albert_tf.data.tuning import without_autotuning_model

# The features of a packed row (see the module docstring), with their per-row shapes in units of
# (T, K, P) and their dtypes.
PACKED_FEATURES = {
    "input_ids": ("T", tf.int32),
    "input_mask": ("T", tf.int32),
    "segment_ids": ("T", tf.int32),
    "position_ids": ("T", tf.int32),
    "sequence_ids": ("T", tf.int32),
    "masked_lm_positions": ("KP", tf.int32),
    "masked_lm_ids": ("KP", tf.int32),
    "masked_lm_weights": ("KP", tf.float32),
    "next_sentence_labels": ("K", tf.int32),
    "sequence_starts": ("K", tf.int32),
    "sequence_weights": ("K", tf.float32),
}


def is_packed(features) -> bool:
  """Whether a batch of features holds packed rows (see the module docstring)."""
  return "sequence_weights" in features


# do_not_convert: tf.data traces map functions with autograph, which converts them (and what
# they call) at every pipeline build; their control flow is tf.while_loop.
@tf.autograph.experimental.do_not_convert
def assign_rows(lengths, max_seq_length, max_sequences_per_row):
  """First-fit decreasing: where each of a window's sequences goes.

  Args:
    lengths: int32 [W], each sequence's real tokens (each at most max_seq_length).
    max_seq_length: int. T, the tokens of a row.
    max_sequences_per_row: int. K, the most sequences of a row.

  Returns:
    (row, offset, slot, num_rows): int32 [W] each sequence's row, its first token's position in
    the row and its index among the row's sequences (0..K-1, in the order they were placed);
    num_rows int32, the rows used (rows 0 .. num_rows - 1: first fit opens rows in order).
  """
  lengths = tf.cast(lengths, tf.int32)
  width = tf.shape(lengths)[0]
  # Longest first; a stable sort keeps equal lengths in file order (deterministic).
  order = tf.argsort(-lengths, stable=True)

  def place(i, fills, counts, row, offset, slot):
    sequence = order[i]
    length = lengths[sequence]
    fits = tf.logical_and(fills + length <= max_seq_length, counts < max_sequences_per_row)
    # The first row that fits; there always is one (W rows for W sequences).
    target = tf.cast(tf.argmax(tf.cast(fits, tf.int32)), tf.int32)
    row = tf.tensor_scatter_nd_update(row, [[sequence]], [target])
    offset = tf.tensor_scatter_nd_update(offset, [[sequence]], [fills[target]])
    slot = tf.tensor_scatter_nd_update(slot, [[sequence]], [counts[target]])
    fills = tf.tensor_scatter_nd_add(fills, [[target]], [length])
    counts = tf.tensor_scatter_nd_add(counts, [[target]], [1])
    return i + 1, fills, counts, row, offset, slot

  zeros = tf.zeros([width], tf.int32)
  _, _, _, row, offset, slot = tf.while_loop(
      lambda i, *_: i < width, place, (tf.constant(0), zeros, zeros, zeros, zeros, zeros))
  num_rows = tf.reduce_max(tf.concat([row + 1, [0]], 0))
  return row, offset, slot, num_rows


@tf.autograph.experimental.do_not_convert
def pack_window(features, max_sequences_per_row):
  """Packs a window of decoded records into rows.

  Args:
    features: a dict of a window of W decoded records (decode_record's, batched): input_ids,
      input_mask, segment_ids int [W, T]; masked_lm_positions, masked_lm_ids int [W, P] and
      masked_lm_weights float [W, P]; next_sentence_labels int [W, 1]. Other keys are ignored.
    max_sequences_per_row: int. K.

  Returns:
    (rows, num_rows): a dict of the PACKED_FEATURES, each [W, ...] (rows num_rows .. W - 1
    empty: all zeros), and num_rows int32.
  """
  input_mask = features["input_mask"]
  width, seq_length = tf.shape(input_mask)[0], input_mask.shape[1]
  num_predictions = features["masked_lm_positions"].shape[1]
  k = max_sequences_per_row
  lengths = tf.reduce_sum(tf.cast(input_mask > 0, tf.int32), axis=1)
  row, offset, slot, num_rows = assign_rows(lengths, seq_length, k)

  # Tokens: each sequence's first `length` tokens to (row, offset + t).
  t = tf.range(seq_length)[tf.newaxis, :]  # [1, T]
  real = t < lengths[:, tf.newaxis]  # [W, T]
  shape = tf.shape(input_mask)
  rows_of = tf.broadcast_to(row[:, tf.newaxis], shape)
  token_index = tf.boolean_mask(tf.stack([rows_of, offset[:, tf.newaxis] + t], -1), real)

  def tokens(values):
    return tf.scatter_nd(token_index, tf.boolean_mask(values, real), shape)

  packed = {
      "input_ids": tokens(features["input_ids"]),
      "input_mask": tokens(tf.ones_like(input_mask)),
      "segment_ids": tokens(features["segment_ids"]),
      "position_ids": tokens(tf.broadcast_to(t, shape)),
      "sequence_ids": tokens(tf.broadcast_to(slot[:, tf.newaxis] + 1, shape)),
  }

  # Predictions: sequence s's P slots to (row, slot * P + j), positions moved by its offset
  # (padding slots, weight 0, stay at position 0 as the original's).
  weights = features["masked_lm_weights"]
  j = tf.range(num_predictions)[tf.newaxis, :]
  prediction_index = tf.stack([tf.broadcast_to(row[:, tf.newaxis], tf.shape(weights)),
                               slot[:, tf.newaxis] * num_predictions + j], -1)
  prediction_shape = [width, k * num_predictions]
  positions = tf.where(weights > 0, features["masked_lm_positions"] + offset[:, tf.newaxis], 0)
  packed["masked_lm_positions"] = tf.scatter_nd(prediction_index, positions, prediction_shape)
  packed["masked_lm_ids"] = tf.scatter_nd(prediction_index, features["masked_lm_ids"],
                                          prediction_shape)
  packed["masked_lm_weights"] = tf.scatter_nd(prediction_index, weights, prediction_shape)

  # One entry per sequence at (row, slot).
  sequence_index = tf.stack([row, slot], -1)
  sequence_shape = [width, k]
  labels = tf.reshape(features["next_sentence_labels"], [-1])
  packed["next_sentence_labels"] = tf.scatter_nd(sequence_index, labels, sequence_shape)
  packed["sequence_starts"] = tf.scatter_nd(sequence_index, offset, sequence_shape)
  packed["sequence_weights"] = tf.scatter_nd(sequence_index, tf.ones([width], tf.float32),
                                             sequence_shape)
  return packed, num_rows


def packed_rows(records, max_sequences_per_row, window=PACKING_WINDOW):
  """The rows of a stream of decoded records, packed window by window (the last window may be
  smaller). The result has no empty rows.

  Args:
    records: a tf.data.Dataset of decoded records (decode_record's dicts).
    max_sequences_per_row: int. K.
    window: records packed together.
  """
  @tf.autograph.experimental.do_not_convert
  def pack(features):
    rows, num_rows = pack_window(features, max_sequences_per_row)
    return {name: value[:num_rows] for name, value in rows.items()}
  return records.batch(window).map(pack, num_parallel_calls=tf.data.AUTOTUNE).unbatch()


def packed_batches(records, batch_size, max_sequences_per_row):
  """Each group of `batch_size` consecutive records packed into a batch of `batch_size` rows (the
  rows they do not fill left empty): evaluation packs this way, so that each batch holds the
  very sequences of the unpacked batch at the same step.

  Args:
    records: a tf.data.Dataset of decoded records.
    batch_size: int. Records per batch, and rows per batch.
    max_sequences_per_row: int. K.
  """
  @tf.autograph.experimental.do_not_convert
  def pack(features):
    return pack_window(features, max_sequences_per_row)[0]
  return records.batch(batch_size, drop_remainder=True).map(pack,
                                                            num_parallel_calls=tf.data.AUTOTUNE)


def count_packed_rows(path, max_seq_length, max_sequences_per_row, window=PACKING_WINDOW):
  """The rows TFRecord file `path` packs into (packed_rows of its records in file order), from
  the records' lengths alone."""
  spec = {"input_mask": tf.io.FixedLenFeature([max_seq_length], tf.int64)}

  @tf.autograph.experimental.do_not_convert
  def lengths(records):
    mask = tf.io.parse_example(records, spec)["input_mask"]
    return tf.reduce_sum(tf.cast(mask > 0, tf.int32), axis=1)

  @tf.autograph.experimental.do_not_convert
  def rows(window_lengths):
    return assign_rows(window_lengths, max_seq_length, max_sequences_per_row)[3]

  d = tf.data.TFRecordDataset(path).batch(1024).map(lengths).unbatch().batch(window)
  d = without_autotuning_model(d.map(rows, num_parallel_calls=tf.data.AUTOTUNE))
  return int(d.reduce(np.int64(0), lambda total, n: total + tf.cast(n, tf.int64)))


def packing_cache_field(max_seq_length, max_sequences_per_row, window=PACKING_WINDOW):
  """The name under which a record-count cache keeps a file's packed rows at these settings."""
  return f"packed_rows_T{max_seq_length}_K{max_sequences_per_row}_W{window}"

