"""Calibration data for static int8 quantization (export_onnx --quantize=static): a bounded number
of the task's examples, as the fine-tuning and pretraining binaries write them.

The file is a TFRecord of tf.train.Examples with int64 features input_ids, input_mask and
segment_ids of one length (run_classifier's, run_ner's, run_squad's cached train/dev feature files
and create_pretraining_data's output all qualify). Each example is cut to its real tokens (the
input_mask's ones): static quantization fixes each activation's int8 range from what it sees, and
the padding a fixed-length file carries is not what a served request of its own length computes.
"""

from albert_tf import errors

FEATURE_NAMES = ("input_ids", "input_mask", "segment_ids")
DEFAULT_EXAMPLES = 128
# How the error messages say where the file comes from.
FILE_HINT = ("a TFRecord of input_ids/input_mask/segment_ids int64 features, as run_classifier "
             "or create_pretraining_data writes them")


def read_calibration_examples(path, max_seq_length, limit=DEFAULT_EXAMPLES,
                              flag="--calibration_data"):
  """The first `limit` examples of TFRecord file `path`, each cut to its real tokens.

  Args:
    path: the TFRecord file (local or remote).
    max_seq_length: the export's longest request: no example may be longer.
    limit: how many examples to read at most.
    flag: the flag that named `path`, for the error messages.

  Returns:
    A list of {input_ids, input_mask, segment_ids: int32 [1, t]} numpy features, t <= T.

  Raises:
    errors.UsageError: `path` is missing, or `limit` is below 1.
    errors.DataFormatError: `path` is corrupt, holds no records, lacks a feature, or holds
      features longer than `max_seq_length` or of unequal lengths.
  """
  import numpy as np  # pylint: disable=import-outside-toplevel
  import tensorflow as tf  # pylint: disable=import-outside-toplevel
  if limit < 1:
    raise errors.UsageError(f"--calibration_examples={limit}: give at least 1")
  if not path:
    raise errors.UsageError(f"{flag} is not given: static quantization needs calibration "
                            f"examples, {FILE_HINT}")
  if not tf.io.gfile.exists(path):
    raise errors.UsageError(f"{flag}={path}: no such file; give {FILE_HINT}")
  examples = []
  try:
    for record in tf.data.TFRecordDataset(path).take(limit):
      examples.append(_features(tf.train.Example.FromString(record.numpy()), path, flag,
                                max_seq_length, len(examples), np))
  except tf.errors.DataLossError as e:
    raise errors.DataFormatError(f"{flag}={path}: corrupt TFRecord data ({e.message}); give "
                                 f"{FILE_HINT}") from e
  if not examples:
    raise errors.DataFormatError(f"{flag}={path} holds no records; give {FILE_HINT}")
  return examples


def _features(example, path, flag, max_seq_length, index, np):
  """One example's features cut to its real tokens (see read_calibration_examples)."""
  found = example.features.feature
  values = {}
  for name in FEATURE_NAMES:
    if name not in found or found[name].WhichOneof("kind") != "int64_list":
      raise errors.DataFormatError(
          f"{flag}={path}: record {index} has no int64 feature `{name}` (it has "
          f"{sorted(found)}); give {FILE_HINT}")
    values[name] = np.asarray(found[name].int64_list.value, np.int64)
  lengths = {len(v) for v in values.values()}
  length = max(lengths)
  if len(lengths) > 1 or length > max_seq_length:
    raise errors.DataFormatError(
        f"{flag}={path}: record {index}'s features hold "
        f"{', '.join(f'{n}={len(v)}' for n, v in values.items())} values where --max_seq_length "
        f"is {max_seq_length}; write the file with --max_seq_length={max_seq_length} or less, "
        f"or export with a longer --max_seq_length")
  real = max(1, int(values["input_mask"].sum()))
  return {name: value[None, :real].astype(np.int32) for name, value in values.items()}


def synthetic_examples(id_bound, lengths, count, seed=0):
  """`count` examples of random token ids in [5, id_bound), cycling through `lengths`, all real
  tokens: calibration for a random-weight benchmark export, whose activations no task data would
  represent either. Returns a list as read_calibration_examples's."""
  import numpy as np  # pylint: disable=import-outside-toplevel
  rng = np.random.default_rng(seed)
  examples = []
  for i in range(count):
    n = lengths[i % len(lengths)]
    examples.append({"input_ids": rng.integers(5, max(6, id_bound), (1, n), dtype=np.int32),
                     "input_mask": np.ones((1, n), np.int32),
                     "segment_ids": np.zeros((1, n), np.int32)})
  return examples

