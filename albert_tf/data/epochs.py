"""Training input built once per run that reads every record once per epoch, in an order fixed by
a seed, and resumes from a step.

The original built its input once per training call, so every record was read once per epoch.
Rebuilding the input at each checkpoint instead (the only way to resume a tf.distribute iterator
exactly, since those cannot be checkpointed) would read only the head of each file between
checkpoints. Here the input is a stream of epochs, epoch e shuffled with a seed derived from
(seed, e): the same seed gives the same stream, so a resumed run skips what the interrupted one had
consumed and goes on exactly where it stopped.
"""

import json
import logging
import random

import numpy as np
import tensorflow as tf

from albert_tf.core import io
from albert_tf.data.tuning import without_autotuning_model

logger = logging.getLogger("albert_tf")

# Epochs of a training stream: unbounded in practice (2**62 epochs of one record each).
_NO_END = 2**62
# Mixes the epoch into the seed of tf.data's shuffle (a prime well above any epoch count).
_EPOCH_STRIDE = 1_000_003


def resolve_seed(seed):
  """The seed of a training stream: `seed` when given, else a fresh random one (an unseeded run
  gets a new order every time it starts, as the original's)."""
  return random.SystemRandom().randrange(2**31) if seed is None else int(seed)


# do_not_convert: tf.data traces map functions with autograph, which converts them (and what
# they call) at every pipeline build; their control flow is Python's or tf.while_loop.
@tf.autograph.experimental.do_not_convert
def epoch_seed(seed, epoch):
  """The int64 shuffle seed of epoch `epoch` (a tensor) of a stream seeded with `seed`."""
  return tf.cast(seed, tf.int64) * _EPOCH_STRIDE + tf.cast(epoch, tf.int64)


def shuffled_files(files, seed, epoch):
  """`files` (a list of paths) in epoch `epoch`'s order: a permutation fixed by (seed, epoch)."""
  keys = tf.random.stateless_uniform([len(files)], seed=tf.stack(
      [tf.cast(seed, tf.int64), tf.cast(epoch, tf.int64)]))
  return tf.gather(tf.constant(files), tf.argsort(keys))


def epoch_stream(records_of_epoch, start_epoch=0):
  """The concatenation of records_of_epoch(e) for e = start_epoch, start_epoch + 1, ...

  records_of_epoch: int64 scalar tensor -> a finite tf.data.Dataset (one epoch, in its order).
  """
  return tf.data.Dataset.range(start_epoch, _NO_END).flat_map(records_of_epoch)


def count_records(files):
  """The number of records in TFRecord `files` (reads them without parsing)."""
  counts = tf.data.Dataset.from_tensor_slices(tf.constant(files)).map(
      lambda f: tf.data.TFRecordDataset(f).reduce(np.int64(0), lambda n, _: n + 1),
      num_parallel_calls=tf.data.AUTOTUNE)
  return int(without_autotuning_model(counts).reduce(np.int64(0), lambda total, n: total + n))


def cached_record_count(files, cache_path, writes=True, counter=None, field="records"):
  """count_records(files), kept in the JSON file cache_path by path with each file's size and
  modification time, so that a resumed run does not read the corpus again. A file whose size or
  time changed since (or that the cache lacks) is counted again, with a log line.

  Args:
    files: TFRecord paths.
    cache_path: the cache (in output_dir); None counts without one.
    writes: whether to write the cache (the chief of a multi-worker run).
    counter: path -> int, what to count in each file instead of its records (e.g. the rows
      its records pack into); None counts records.
    field: the name of that count in each file's cache entry (one entry keeps several).
  """
  count_file = counter or (lambda path: count_records([path]))
  if cache_path is None:
    return sum(count_file(path) for path in files)
  cache = json.loads(io.read_text(cache_path)) if io.exists(cache_path) else {}
  total = 0
  for path in files:
    stat = tf.io.gfile.stat(path)
    key = {"size": stat.length, "mtime_nsec": stat.mtime_nsec}
    entry = cache.get(path)
    if entry is not None and {k: entry.get(k) for k in key} != key:
      logger.info(f"{path} changed since its records were counted (size or time): counting again")
      entry = None
    entry = dict(key) if entry is None else entry
    if field not in entry:
      entry[field] = count_file(path)
    cache[path] = entry
    total += entry[field]
  if writes:
    io.write_text_atomically(cache_path, json.dumps(cache, indent=1, sort_keys=True))
  return total


def records_per_step(global_batch_size, input_context=None):
  """Records one input pipeline hands out per training step (all its replicas' batches)."""
  if input_context is None:
    return global_batch_size
  return global_batch_size // input_context.num_input_pipelines


def batches_per_step(input_context=None):
  """Per-replica batches one input pipeline hands out per training step."""
  if input_context is None:
    return 1
  return input_context.num_replicas_in_sync // input_context.num_input_pipelines
