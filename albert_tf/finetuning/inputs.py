"""tf.data input for fine-tuning feature files: examples grouped into batches of similar length
and each batch trimmed to its longest real sequence, so that short GLUE sentences do not pay for
128 or 512 padded positions. Eval and predict outputs go back to file order by example_index.
Trimming (albert_tf.data.trimming) drops only padding columns.

What a cached feature file was written from is checked by albert_tf.finetuning.feature_cache.
"""

import logging

import numpy as np
import tensorflow as tf

from albert_tf.data import epochs
from albert_tf.data.feature_check import check_first_record
from albert_tf.data.trimming import EXAMPLE_INDEX, SEQUENCE_FEATURES, trim_batch
from albert_tf.data.tuning import without_autotuning_model

logger = logging.getLogger("albert_tf")


def _decoder(name_to_features, shapes):
  # do_not_convert: tf.data traces map functions with autograph, which converts them (and what
  # they call) at every pipeline build; their control flow is Python's or tf.while_loop.
  @tf.autograph.experimental.do_not_convert
  def decode(index, record):
    example = tf.io.parse_single_example(record, name_to_features)
    # int64 in tf.Example; int32 for the model (and TPUs).
    example = {k: tf.cast(v, tf.int32) if v.dtype == tf.int64 else v for k, v in example.items()}
    example = {k: tf.reshape(v, shapes[k]) if k in shapes else v for k, v in example.items()}
    example[EXAMPLE_INDEX] = tf.cast(index, tf.int32)
    return example
  return decode


def _by_length(dataset, batch_size, max_seq_length, bucket_width, drop_remainder):
  """Batches of examples of similar real length (buckets bucket_width tokens wide)."""
  boundaries = list(range(bucket_width + 1, max_seq_length + 1, bucket_width))
  return dataset.bucket_by_sequence_length(
      lambda ex: tf.reduce_max(tf.reduce_sum(ex["input_mask"], axis=-1)), boundaries,
      [batch_size] * (len(boundaries) + 1), drop_remainder=drop_remainder)


def feature_dataset(input_files, name_to_features, batch_size, is_training, max_seq_length,
                    drop_remainder=False, dynamic_length=True, length_multiple=8,
                    bucket_width=16, shuffle_buffer=100, seed=None, input_context=None,
                    shapes=None, sequence_features=SEQUENCE_FEATURES):
  """Batches of decoded feature records, each with its record number as `example_index`.

  Training: an endless stream of epochs, each reading every record once, shuffled (buffer
  shuffle_buffer) with a seed derived from `seed` and the epoch (see albert_tf.data.epochs), so a
  seeded stream is the same every time it is built. With dynamic_length, examples are grouped
  into batches of similar length (eval and predict too: restore file order with
  `example_index`, see `in_file_order`) and each batch is trimmed. batch_size is global; with
  input_context the per-replica share is returned, records sharded over input pipelines. `shapes`
  reshapes features after parsing (e.g. RACE's [4 * T] to [4, T]).
  """
  if input_context is not None:
    batch_size = input_context.get_per_replica_batch_size(batch_size)
  d = tf.data.TFRecordDataset(input_files).enumerate()
  if input_context is not None and input_context.num_input_pipelines > 1:
    d = d.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
  if is_training:
    records, seed = d, epochs.resolve_seed(seed)
    d = epochs.epoch_stream(lambda epoch: records.shuffle(
        shuffle_buffer, seed=epochs.epoch_seed(seed, epoch)))
  d = d.map(_decoder(name_to_features, shapes or {}), num_parallel_calls=tf.data.AUTOTUNE)
  drop = drop_remainder or is_training
  if dynamic_length and (is_training or not drop_remainder):
    d = _by_length(d, batch_size, max_seq_length, bucket_width, drop)
  else:
    d = d.batch(batch_size, drop_remainder=drop)
  if dynamic_length:
    d = d.map(lambda b: trim_batch(b, max_seq_length, length_multiple, sequence_features))
  return without_autotuning_model(d.prefetch(tf.data.AUTOTUNE))


def in_file_order(outputs):
  """Reorders collected per-example outputs ({name: [N, ...]}, with example_index) to the
  feature file's order."""
  order = np.argsort(outputs[EXAMPLE_INDEX], kind="stable")
  return {name: value[order] for name, value in outputs.items()}


def classifier_features(max_seq_length, regression=False, num_choices=1):
  """The parsing spec of the classifier's feature records (RACE's: num_choices sequences)."""
  length = max_seq_length * num_choices
  return {
      "input_ids": tf.io.FixedLenFeature([length], tf.int64),
      "input_mask": tf.io.FixedLenFeature([length], tf.int64),
      "segment_ids": tf.io.FixedLenFeature([length], tf.int64),
      "label_ids": tf.io.FixedLenFeature([], tf.float32 if regression else tf.int64),
      "is_real_example": tf.io.FixedLenFeature([], tf.int64),
  }


def check_cached_features(path, length):
  """Raises a clear error when a cached feature file was written for another sequence length
  (parsing it would fail deep inside tf.data)."""
  check_first_record(path, {"input_ids": (length, "--max_seq_length (or --max_qa_length)")},
                     "the file was written with another length: delete it to regenerate it")
