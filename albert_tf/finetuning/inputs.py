"""tf.data input for fine-tuning feature files: batches trimmed to their longest real sequence,
and training batches bucketed by length, so that short GLUE sentences do not pay for 128 or 512
padded positions.

Trimming drops only padding columns (input_mask 0 in every row of the batch). Padded keys add
-10000 to the attention logits, which underflows to exactly 0 after the softmax, so the outputs
at real positions are the same as with full padding, up to float summation order.
"""

import tensorflow as tf

SEQUENCE_FEATURES = ("input_ids", "input_mask", "segment_ids")


def trimmed_length(input_mask, max_seq_length, length_multiple=8):
  """The batch's longest real sequence rounded up to length_multiple (capped at max_seq_length).

  Rounding bounds the number of distinct shapes (each one is a separate trace / XLA compile).
  input_mask int [B, T] -> int32 scalar (at least 1, for an empty batch).
  """
  longest = tf.reduce_max(tf.reduce_sum(tf.cast(input_mask, tf.int32), axis=-1))
  longest = tf.maximum(longest, 1)
  rounded = (longest + length_multiple - 1) // length_multiple * length_multiple
  return tf.minimum(rounded, max_seq_length)


def trim_batch(batch, max_seq_length, length_multiple=8, sequence_features=SEQUENCE_FEATURES):
  """Cuts the [B, T] sequence features of a batch to trimmed_length columns."""
  length = trimmed_length(batch["input_mask"], max_seq_length, length_multiple)
  return {name: (value[:, :length] if name in sequence_features else value)
          for name, value in batch.items()}


def _decoder(name_to_features):
  def decode(record):
    example = tf.io.parse_single_example(record, name_to_features)
    # int64 in tf.Example; int32 for the model (and TPUs).
    return {k: tf.cast(v, tf.int32) if v.dtype == tf.int64 else v for k, v in example.items()}
  return decode


def feature_dataset(input_files, name_to_features, batch_size, is_training, max_seq_length,
                    drop_remainder=False, dynamic_length=True, length_multiple=8,
                    bucket_width=16, shuffle_buffer=100, seed=None, input_context=None):
  """Batches of decoded feature records.

  Training: repeated, shuffled, and (with dynamic_length) grouped into batches of similar length
  (buckets bucket_width tokens wide) before trimming. Eval/predict: file order, each batch trimmed.
  batch_size is global; with input_context the per-replica share is returned, files or records
  sharded over input pipelines.
  """
  if input_context is not None:
    batch_size = input_context.get_per_replica_batch_size(batch_size)
  d = tf.data.TFRecordDataset(input_files)
  if input_context is not None and input_context.num_input_pipelines > 1:
    d = d.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
  if is_training:
    d = d.repeat().shuffle(shuffle_buffer, seed=seed)
  d = d.map(_decoder(name_to_features), num_parallel_calls=tf.data.AUTOTUNE)
  if is_training and dynamic_length:
    boundaries = list(range(bucket_width + 1, max_seq_length + 1, bucket_width))
    d = d.bucket_by_sequence_length(
        lambda ex: tf.reduce_sum(ex["input_mask"]), boundaries,
        [batch_size] * (len(boundaries) + 1), drop_remainder=True)
  else:
    d = d.batch(batch_size, drop_remainder=drop_remainder or is_training)
  if dynamic_length:
    d = d.map(lambda b: trim_batch(b, max_seq_length, length_multiple))
  return d.prefetch(tf.data.AUTOTUNE)


def classifier_features(max_seq_length, regression=False):
  """The parsing spec of the classifier's feature records."""
  return {
      "input_ids": tf.io.FixedLenFeature([max_seq_length], tf.int64),
      "input_mask": tf.io.FixedLenFeature([max_seq_length], tf.int64),
      "segment_ids": tf.io.FixedLenFeature([max_seq_length], tf.int64),
      "label_ids": tf.io.FixedLenFeature([], tf.float32 if regression else tf.int64),
      "is_real_example": tf.io.FixedLenFeature([], tf.int64),
  }
