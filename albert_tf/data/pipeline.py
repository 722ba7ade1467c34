"""tf.data input pipelines for pretraining, as the original's input_fn (plus dynamic masking)."""

import dataclasses
import functools

import tensorflow as tf

from albert_tf.core import errors
from albert_tf.data import dynamic_masking, epochs, packing
from albert_tf.data.feature_check import check_first_record
from albert_tf.data.tuning import without_autotuning_model
from albert_tf.core.io import expand_input_patterns


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


# do_not_convert: tf.data traces map functions with autograph, which converts them (and what
# they call) at every pipeline build; their control flow is Python's or tf.while_loop.
@tf.autograph.experimental.do_not_convert
def decode_record(record, spec):
  """Parses one record; int64 -> int32 (as the original, for TPUs)."""
  example = tf.io.parse_single_example(record, spec)
  return {k: tf.cast(v, tf.int32) if v.dtype == tf.int64 else v for k, v in example.items()}


def pretraining_dataset(input_files, max_seq_length, max_predictions_per_seq, batch_size,
                        is_training, num_cpu_threads=4, input_context=None, dynamic=None,
                        seed=None, start_step=0, count_cache=None, max_sequences_per_row=None):
  """Batches of pretraining features.

  Training: an endless stream of epochs (see albert_tf.data.epochs), each reading every file once
  in a shuffled order, interleaved, records shuffled (buffer 100, as the original), batches of
  `batch_size` with drop_remainder (batches run across epoch ends). Eval: files in order,
  repeated. With an input_context (tf.distribute), `batch_size` is global: each input pipeline
  reads its shard of the files (all files, with fewer files than pipelines) and makes
  per-replica batches. A `seed` fixes the order; with it, `start_step` > 0 starts where a run
  that has made start_step updates stopped (the stream skips the records those consumed, reading
  at most one epoch). Unseeded, every call draws a new order and start_step is ignored.
  count_cache: (path, writes) of the record counts a resume needs (epochs.
  cached_record_count), or None to count afresh.
  With `dynamic` (a DynamicMasking), masks are drawn afresh from token_boundary every epoch, with
  stateless random ops keyed by (seed, input pipeline, epoch, record index in its epoch): the same
  seeds give the same masks, resumed or not (eval: keyed by the record's position, seed or 0).
  With `max_sequences_per_row` (K), batches are of packed rows (albert_tf.data.packing) instead
  of records, `batch_size` counting rows. Training packs each file's records in file order
  (masked first, keyed by (seed, pipeline, epoch, the file's place in the epoch, the record's
  in its file)), then shuffles and batches rows as it does records; a resume skips rows, counted
  once per file. Evaluation packs each batch's records into that batch, so that every step
  evaluates the very sequences it does unpacked.
  """
  if isinstance(input_files, str):
    input_files = expand_input_patterns(input_files)
  global_batch_size = batch_size
  if input_context is not None:
    batch_size = input_context.get_per_replica_batch_size(batch_size)
  spec = feature_spec(max_seq_length, max_predictions_per_seq,
                      with_token_boundary=dynamic is not None)
  keyed = dynamic is not None
  decode = _decoder(spec, dynamic, max_predictions_per_seq)
  if is_training and max_sequences_per_row is not None:
    def rows_of_file(path, key):
      records = tf.data.TFRecordDataset(path)
      if keyed:
        records = records.enumerate().map(
            lambda i, r: (tf.random.experimental.stateless_fold_in(key, i), r))
      records = records.map(decode, num_parallel_calls=tf.data.AUTOTUNE)
      return packing.packed_rows(records, max_sequences_per_row)
    count = functools.partial(packing.count_packed_rows, max_seq_length=max_seq_length,
                              max_sequences_per_row=max_sequences_per_row)
    d = _training_records(input_files, seed, input_context, num_cpu_threads,
                          start_step * epochs.records_per_step(global_batch_size, input_context),
                          keyed, count_cache, rows_of_file=rows_of_file,
                          count=(count, packing.packing_cache_field(max_seq_length,
                                                                    max_sequences_per_row)))
    return without_autotuning_model(
        d.batch(batch_size, drop_remainder=True).prefetch(tf.data.AUTOTUNE))
  if is_training:
    d = _training_records(input_files, seed, input_context, num_cpu_threads,
                          start_step * epochs.records_per_step(global_batch_size, input_context),
                          keyed, count_cache)
  else:
    d = tf.data.TFRecordDataset(input_files)
    if input_context is not None and input_context.num_input_pipelines > 1:
      d = d.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
    d = d.repeat()
    if keyed:
      key = _pipeline_key(0 if seed is None else seed, input_context)
      d = d.enumerate().map(lambda i, r: (tf.random.experimental.stateless_fold_in(key, i), r))
  d = d.map(decode, num_parallel_calls=tf.data.AUTOTUNE)
  if max_sequences_per_row is not None:
    d = packing.packed_batches(d, batch_size, max_sequences_per_row)
  else:
    d = d.batch(batch_size, drop_remainder=True)
  return without_autotuning_model(d.prefetch(tf.data.AUTOTUNE))


def _decoder(spec, dynamic, max_predictions_per_seq):
  """serialized record -> features; with dynamic masking, (mask key, record) -> features."""
  if dynamic is None:
    return lambda r: decode_record(r, spec)
  return lambda key, r: _apply_dynamic_mask(decode_record(r, spec), key, dynamic,
                                            max_predictions_per_seq)


def _pipeline_key(seed, input_context):
  """The stateless seed of this input pipeline's masks (pipelines may read the same files)."""
  pipeline = 0 if input_context is None else input_context.input_pipeline_id
  return tf.constant([seed, pipeline], tf.int64)


def _training_records(input_files, seed, input_context, num_cpu_threads, records_to_skip,
                      keyed=False, count_cache=None, rows_of_file=None, count=None):
  """The serialized training records of this input pipeline, from record records_to_skip of the
  seeded stream on. keyed: (mask key, record) pairs instead, the key a stateless seed fixed by
  (seed, pipeline, epoch, the record's index in its epoch): the same record of the same epoch
  is masked alike by every run of the stream, resumed or not.

  rows_of_file: (path, key) -> a dataset of one file's rows, which the epochs then shuffle in
  place of records (key: the stateless seed of the file in this epoch when keyed, else None);
  count: (path -> its rows, the name of that count in count_cache) for a resume."""
  seeded = seed is not None
  seed = epochs.resolve_seed(seed)
  files = list(input_files)
  if input_context is not None and input_context.num_input_pipelines > 1:
    if len(files) >= input_context.num_input_pipelines:
      files = files[input_context.input_pipeline_id::input_context.num_input_pipelines]
    else:
      # Too few files to split: every pipeline reads them all, shuffled its own way (as the
      # original's per-host input on TPU pods).
      seed += input_context.input_pipeline_id
  cycle_length = min(num_cpu_threads, len(files))

  @tf.autograph.experimental.do_not_convert
  def records_of_epoch(epoch):
    d = tf.data.Dataset.from_tensor_slices(epochs.shuffled_files(files, seed, epoch))
    key = tf.random.experimental.stateless_fold_in(_pipeline_key(seed, input_context), epoch)
    if rows_of_file is None:
      read = tf.data.TFRecordDataset
    else:
      d = d.enumerate()
      read = lambda i, path: rows_of_file(
          path, tf.random.experimental.stateless_fold_in(key, i) if keyed else None)
    # Deterministic when seeded, so that the same seed gives the same stream.
    d = d.interleave(read, cycle_length=cycle_length, num_parallel_calls=cycle_length,
                     deterministic=seeded)
    if keyed and rows_of_file is None:
      d = d.enumerate().map(lambda i, r: (tf.random.experimental.stateless_fold_in(key, i), r))
    return d.shuffle(buffer_size=100, seed=epochs.epoch_seed(seed, epoch))

  start_epoch, offset = 0, 0
  if seeded and records_to_skip:
    counter, field = count if count is not None else (None, "records")
    total = epochs.cached_record_count(files, *(count_cache or (None,)), counter=counter,
                                       field=field)
    if not total:
      raise errors.DataFormatError(f"the training input files {files} hold no records")
    start_epoch, offset = divmod(records_to_skip, total)
  return epochs.epoch_stream(records_of_epoch, start_epoch).skip(offset)


def check_record_lengths(input_file, max_seq_length, max_predictions_per_seq):
  """Raises a ValueError naming the feature, the length found and the flag to change when the
  first record of input_file was written with another --max_seq_length or
  --max_predictions_per_seq (parsing would fail deep in tf.data with "Some int64_list slice was
  not parsed")."""
  check_first_record(input_file, {
      "input_ids": (max_seq_length, "--max_seq_length"),
      "masked_lm_positions": (max_predictions_per_seq, "--max_predictions_per_seq")},
      "set the flag to the value create_pretraining_data was run with")


@tf.autograph.experimental.do_not_convert
def _apply_dynamic_mask(features, key, settings, max_predictions_per_seq):
  """features with a fresh mask drawn with the stateless seed `key` ([2] int64)."""
  ids = dynamic_masking.restore_original_ids(features)
  masked, positions, labels, weights = dynamic_masking.mask_example(
      ids, features["input_mask"], features["token_boundary"], cls_id=settings.cls_id,
      sep_id=settings.sep_id, mask_id=settings.mask_id, vocab_size=settings.vocab_size,
      max_predictions_per_seq=max_predictions_per_seq, masked_lm_prob=settings.masked_lm_prob,
      max_ngram=settings.max_ngram, favor_shorter_ngram=settings.favor_shorter_ngram, seed=key)
  out = {k: v for k, v in features.items() if k != "token_boundary"}
  # Static prediction shapes, as the records' own: packing lays them out by P.
  fixed = lambda t: tf.ensure_shape(t, [max_predictions_per_seq])
  out.update(input_ids=masked, masked_lm_positions=fixed(positions), masked_lm_ids=fixed(labels),
             masked_lm_weights=fixed(weights))
  return out
