"""Calibration data for static int8 quantization (export_onnx --quantize=static): a bounded number
of the task's examples, as the fine-tuning and pretraining binaries write them.

The file is a TFRecord of tf.train.Examples with int64 features input_ids, input_mask and
segment_ids of one length (run_classifier's, run_ner's, run_squad's cached train/dev feature files
and create_pretraining_data's output all qualify). Each example is cut to its real tokens (the
input_mask's ones): static quantization fixes each activation's int8 range from what it sees, and
the padding a fixed-length file carries is not what a served request of its own length computes.
"""

from albert_tf.core import errors

FEATURE_NAMES = ("input_ids", "input_mask", "segment_ids")
DEFAULT_EXAMPLES = 128
# How the error messages say where the file comes from.
FILE_HINT = ("a TFRecord of input_ids/input_mask/segment_ids int64 features, as run_classifier "
             "or create_pretraining_data writes them")


def read_calibration_examples(path, config, max_seq_length, limit=DEFAULT_EXAMPLES,
                              flag="--calibration_data"):
  """The first `limit` examples of TFRecord file `path`, each cut to its real tokens.

  Args:
    path: the TFRecord file (local or remote).
    config: the exported model's AlbertConfig: every id must be one of its embeddings'
      (input_ids below vocab_size, segment_ids below type_vocab_size), or the quantizer's float
      run fails in a Gather (or, on some CPUs, reads past the table).
    max_seq_length: the export's longest request: no example may be longer.
    limit: how many examples to read at most.
    flag: the flag that named `path`, for the error messages.

  Returns:
    A list of {input_ids, input_mask, segment_ids: int32 [1, t]} numpy features, t <= T.

  Raises:
    errors.UsageError: `path` is missing or a directory, or `limit` is below 1.
    errors.DataFormatError: `path` is corrupt, holds no records or one that is not a
      tf.train.Example, lacks a feature, or holds features longer than `max_seq_length`, of
      unequal lengths, or with ids outside the model's (each message names the record).
  """
  import numpy as np
  import tensorflow as tf
  from google.protobuf.message import DecodeError
  if limit < 1:
    raise errors.UsageError(f"--calibration_examples={limit}: give at least 1")
  if not path:
    raise errors.UsageError(f"{flag} is not given: static quantization needs calibration "
                            f"examples, {FILE_HINT}")
  if not tf.io.gfile.exists(path):
    raise errors.UsageError(f"{flag}={path}: no such file; give {FILE_HINT}")
  if tf.io.gfile.isdir(path):
    raise errors.UsageError(f"{flag}={path} is a directory; give one file in it, {FILE_HINT}")
  bounds = id_bounds(config)
  examples = []
  try:
    for record in tf.data.TFRecordDataset(path).take(limit):
      index = len(examples)
      try:
        example = tf.train.Example.FromString(record.numpy())
      except DecodeError as e:
        raise errors.DataFormatError(f"{flag}={path}: record {index} is not a tf.train.Example; "
                                     f"give {FILE_HINT}") from e
      examples.append(_features(example, f"{flag}={path}: record {index}", max_seq_length,
                                bounds, np))
  except tf.errors.DataLossError as e:
    raise errors.DataFormatError(f"{flag}={path}: corrupt TFRecord data at record "
                                 f"{len(examples)} ({e.message}); give {FILE_HINT}") from e
  if not examples:
    raise errors.DataFormatError(f"{flag}={path} holds no records; give {FILE_HINT}")
  return examples


def id_bounds(config):
  """{feature: (its values' bound: they are in [0, bound), what sets it)} for the ids a model of
  AlbertConfig `config` looks up in its embeddings."""
  return {"input_ids": (config.vocab_size, f"the config's vocab_size is {config.vocab_size}"),
          "segment_ids": (config.type_vocab_size,
                          f"the config's type_vocab_size is {config.type_vocab_size}")}


def _features(example, where, max_seq_length, bounds, np):
  """One example's features cut to its real tokens (see read_calibration_examples); `where`
  names the file and the record, for the messages."""
  found = example.features.feature
  values = {}
  for name in FEATURE_NAMES:
    if name not in found or found[name].WhichOneof("kind") != "int64_list":
      raise errors.DataFormatError(
          f"{where} has no int64 feature `{name}` (it has "
          f"{sorted(found)}); give {FILE_HINT}")
    values[name] = np.asarray(found[name].int64_list.value, np.int64)
  lengths = {len(v) for v in values.values()}
  length = max(lengths)
  if len(lengths) > 1 or length > max_seq_length:
    raise errors.DataFormatError(
        f"{where}'s features hold "
        f"{', '.join(f'{n}={len(v)}' for n, v in values.items())} values where --max_seq_length "
        f"is {max_seq_length}; write the file with --max_seq_length={max_seq_length} or less, "
        f"or export with a longer --max_seq_length")
  _check_ids(values, bounds, where)
  real = max(1, int(values["input_mask"].sum()))
  return {name: value[None, :real].astype(np.int32) for name, value in values.items()}


def _check_ids(values, bounds, where):
  """Raises DataFormatError unless each feature of `bounds` (id_bounds) in `values` (int64
  arrays) is in [0, its bound); `where` says which record, for the message."""
  for name, (bound, why) in bounds.items():
    outside = (values[name] < 0) | (values[name] >= bound)
    if outside.any():
      position = int(outside.argmax())
      raise errors.DataFormatError(
          f"{where}: {name}[{position}] is {int(values[name][position])}, outside [0, {bound}) "
          f"({why}); the file was written for another model: write it with this model's "
          "tokenizer and config (as run_classifier caches its features), or export the model "
          "it was written for")


def synthetic_examples(id_bound, lengths, count, seed=0):
  """`count` examples of random token ids in [5, id_bound), cycling through `lengths`, all real
  tokens: calibration for a random-weight benchmark export, whose activations no task data would
  represent either. Returns a list as read_calibration_examples's."""
  import numpy as np
  rng = np.random.default_rng(seed)
  examples = []
  for i in range(count):
    n = lengths[i % len(lengths)]
    examples.append({"input_ids": rng.integers(5, max(6, id_bound), (1, n), dtype=np.int32),
                     "input_mask": np.ones((1, n), np.int32),
                     "segment_ids": np.zeros((1, n), np.int32)})
  return examples

