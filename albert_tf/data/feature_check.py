"""Checks a TFRecord file's features against the lengths the flags promise, before tf.data parses
it (a mismatch there fails deep in the pipeline with "Some int64_list slice was not parsed")."""

import tensorflow as tf

from albert_tf.core import errors


def first_record_lengths(path):
  """{feature name: number of values} of the first tf.train.Example in TFRecord file `path`
  (None for an empty file)."""
  for record in tf.data.TFRecordDataset(path).take(1):
    example = tf.train.Example.FromString(record.numpy())
    lengths = {}
    for name, feature in example.features.feature.items():
      kind = feature.WhichOneof("kind")
      lengths[name] = len(getattr(feature, kind).value) if kind else 0
    return lengths
  return None


def check_first_record(path, expected, fix):
  """Raises ValueError when the first record of `path` lacks a feature of `expected` or holds
  another number of values.

  expected: {feature name: (length, the flag that sets it)}; fix: what the user should do.
  """
  try:
    found = first_record_lengths(path)
  except tf.errors.DataLossError as e:
    raise errors.DataFormatError(
        f"corrupt TFRecord data in {path} ({e.message}); regenerate the file") from e
  if found is None:
    raise errors.DataFormatError(f"{path} holds no records")
  for name, (length, flag) in expected.items():
    if name not in found:
      raise errors.DataFormatError(f"{path} has no feature `{name}` (it has {sorted(found)})")
    if found[name] != length:
      raise errors.DataFormatError(
          f"{path}: feature `{name}` holds {found[name]} values per record where "
          f"{flag} gives {length}; {fix}")
