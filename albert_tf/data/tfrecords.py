"""tf.train.Example encoding and TFRecord files, written atomically, without TensorFlow.

Importing TensorFlow costs seconds and hundreds of MB, a large share of a data-generation run;
the TFRecord framing (length, masked CRC32-C of the length, data, masked CRC32-C of the data) is
simple enough to write directly.
"""

import struct

import google_crc32c

from albert_tf.core.io import AtomicFile


def _varint(value):
  if value < 0:
    value += 1 << 64  # int64 varints encode negatives as 10-byte two's complement
  out = bytearray()
  while True:
    byte = value & 0x7F
    value >>= 7
    if value:
      out.append(byte | 0x80)
    else:
      out.append(byte)
      return bytes(out)


_SMALL_VARINTS = [_varint(i) for i in range(1 << 16)]


def _packed_ints(values):
  table = _SMALL_VARINTS
  if values and 0 <= min(values) and max(values) < 65536:  # token ids, positions, flags
    return b"".join(map(table.__getitem__, values))
  return b"".join(table[v] if 0 <= v < 65536 else _varint(v) for v in values)


def _length_delimited(field_number, payload):
  return _varint(field_number << 3 | 2) + _varint(len(payload)) + payload


def int64_feature(values):
  """Serialized tf.train.Feature holding an Int64List."""
  return _length_delimited(3, _length_delimited(1, _packed_ints(values)))


def float_feature(values):
  """Serialized tf.train.Feature holding a FloatList."""
  return _length_delimited(2, _length_delimited(1, struct.pack(f"<{len(values)}f", *values)))


def encode_example(features):
  """Serialized tf.train.Example from {name: serialized Feature}, in the given order."""
  entries = b"".join(
      _length_delimited(1, _length_delimited(1, name.encode()) + _length_delimited(2, feature))
      for name, feature in features.items())
  return _length_delimited(1, entries)


def masked_crc(data):
  """The TFRecord framing's checksum of `data` (bytes): CRC-32C, rotated and offset."""
  crc = google_crc32c.value(data)
  return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def frame_record(data):
  """One TFRecord: uint64 length, masked CRC of the length, data, masked CRC of the data."""
  length = struct.pack("<Q", len(data))
  return b"".join((length, struct.pack("<I", masked_crc(length)), data,
                   struct.pack("<I", masked_crc(data))))


class AtomicTFRecordWriter:
  """A TFRecordWriter that writes `<dir>/.<name>.tmp-<pid>` and renames it to `path` only on
  success (see files.AtomicFile): a crash or failure never leaves a half-written TFRecord under
  the final name, nor a temporary that an `out/*` glob would pick up.

  Args:
    path: the output file.
    atomic_file: the atomic writer class (`files.AtomicFile`; the Beam pipeline passes one on
      Beam's FileSystems).
  """

  def __init__(self, path, atomic_file=AtomicFile):
    self.path = path
    self._file = atomic_file(path)
    self.count = 0

  def write(self, record):
    self._file.write(frame_record(record))
    self.count += 1

  def close(self):
    self._file.commit()

  def abort(self):
    """Removes the temporary, never raising (the error that caused the abort is the one to
    report); a no-op after close()."""
    self._file.abort()

  def __enter__(self):
    return self

  def __exit__(self, exc_type, exc, tb):
    if exc_type is None:
      self.close()
    else:
      self.abort()
