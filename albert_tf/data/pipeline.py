"""tf.data input pipelines for pretraining, as the original's input_fn (plus dynamic masking)."""

import dataclasses

import tensorflow as tf

from albert_tf.data import dynamic_masking
from albert_tf.data.files import expand_input_patterns


@dataclasses.dataclass
class DynamicMasking:
  """Settings of fresh per-epoch masks (see dynamic_masking.mask_example)."""
  cls_id: int = 2
  sep_id: int = 3
  mask_id: int = 4
  vocab_size: int = 30000
  masked_lm_prob: float = 0.15
  max_ngram: int = 3
  favor_shorter_ngram: bool = True


def feature_spec(max_seq_length, max_predictions_per_seq, with_token_boundary=False,
                 with_predictions=True):
  spec = {
      "input_ids": tf.io.FixedLenFeature([max_seq_length], tf.int64),
      "input_mask": tf.io.FixedLenFeature([max_seq_length], tf.int64),
      "segment_ids": tf.io.FixedLenFeature([max_seq_length], tf.int64),
      "next_sentence_labels": tf.io.FixedLenFeature([1], tf.int64),
  }
  if with_token_boundary:
    spec["token_boundary"] = tf.io.FixedLenFeature([max_seq_length], tf.int64)
  if with_predictions:
    spec["masked_lm_positions"] = tf.io.FixedLenFeature([max_predictions_per_seq], tf.int64)
    spec["masked_lm_ids"] = tf.io.FixedLenFeature([max_predictions_per_seq], tf.int64)
    spec["masked_lm_weights"] = tf.io.FixedLenFeature([max_predictions_per_seq], tf.float32)
  return spec


def decode_record(record, spec):
  """Parses one record; int64 -> int32 (as the original, for TPUs)."""
  example = tf.io.parse_single_example(record, spec)
  return {k: tf.cast(v, tf.int32) if v.dtype == tf.int64 else v for k, v in example.items()}


def pretraining_dataset(input_files, max_seq_length, max_predictions_per_seq, batch_size,
                        is_training, num_cpu_threads=4, input_context=None, dynamic=None,
                        seed=None):
  """Batches of pretraining features.

  Training: files shuffled and repeated, read interleaved, records shuffled (buffer 100), batches
  of `batch_size` with drop_remainder. Eval: files in order, repeated. With an input_context
  (tf.distribute), `batch_size` is global: each input pipeline reads its shard of the files (all
  files, with fewer files than pipelines) and makes per-replica batches. A `seed` makes the
  training order reproducible (and resumable exactly from a checkpointed iterator).
  With `dynamic` (a DynamicMasking), masks are drawn afresh from token_boundary every epoch.
  """
  if isinstance(input_files, str):
    input_files = expand_input_patterns(input_files)
  if input_context is not None:
    batch_size = input_context.get_per_replica_batch_size(batch_size)
  spec = feature_spec(max_seq_length, max_predictions_per_seq,
                      with_token_boundary=dynamic is not None)
  if is_training:
    d = tf.data.Dataset.from_tensor_slices(tf.constant(input_files))
    if input_context is not None and input_context.num_input_pipelines > 1:
      if len(input_files) >= input_context.num_input_pipelines:
        d = d.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
      elif seed is not None:
        # Too few files to split: every pipeline reads them all, shuffled its own way (as the
        # original's per-host input on TPU pods).
        seed += input_context.input_pipeline_id
    d = d.repeat().shuffle(buffer_size=len(input_files), seed=seed)
    cycle_length = min(num_cpu_threads, len(input_files))
    d = d.interleave(tf.data.TFRecordDataset, cycle_length=cycle_length,
                     num_parallel_calls=cycle_length, deterministic=seed is not None)
    d = d.shuffle(buffer_size=100, seed=seed)
  else:
    d = tf.data.TFRecordDataset(input_files)
    if input_context is not None and input_context.num_input_pipelines > 1:
      d = d.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
    d = d.repeat()
  d = d.map(lambda r: decode_record(r, spec), num_parallel_calls=tf.data.AUTOTUNE)
  if dynamic is not None:
    d = d.map(lambda f: _apply_dynamic_mask(f, dynamic, max_predictions_per_seq),
              num_parallel_calls=tf.data.AUTOTUNE)
  d = d.batch(batch_size, drop_remainder=True)
  return d.prefetch(tf.data.AUTOTUNE)


def _apply_dynamic_mask(features, settings, max_predictions_per_seq):
  ids = dynamic_masking.restore_original_ids(features)
  masked, positions, labels, weights = dynamic_masking.mask_example(
      ids, features["input_mask"], features["token_boundary"], cls_id=settings.cls_id,
      sep_id=settings.sep_id, mask_id=settings.mask_id, vocab_size=settings.vocab_size,
      max_predictions_per_seq=max_predictions_per_seq, masked_lm_prob=settings.masked_lm_prob,
      max_ngram=settings.max_ngram, favor_shorter_ngram=settings.favor_shorter_ngram)
  out = {k: v for k, v in features.items() if k != "token_boundary"}
  out.update(input_ids=masked, masked_lm_positions=positions, masked_lm_ids=labels,
             masked_lm_weights=weights)
  return out
