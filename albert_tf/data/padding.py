"""How much of a TFRecord file of pretraining (or fine-tuning) records is padding, and what
packing several sequences into each row would save; without TensorFlow.

A record of max_seq_length T whose input_mask holds L ones computes T positions for L real
tokens. run_pretraining --pack_sequences puts several records' sequences into one row of T (at
most --max_sequences_per_row of them); first_fit_decreasing estimates how many rows a file's
records then fill, packing each window of PACKING_WINDOW records (in file order) longest first,
each sequence into the first row it fits:

>>> first_fit_decreasing([300, 100, 400, 200], row_length=512, max_sequences_per_row=4)
[[400, 100], [300, 200]]
>>> counter = PaddingCounter(max_seq_length=512)
>>> for length in (300, 100, 400, 200):
...   counter.add(length)
>>> stats = counter.stats()
>>> stats.records, stats.real_token_fraction, stats.packed_rows, stats.sequences_per_row
(4, 0.48828125, 2, 2.0)
"""

import dataclasses
import struct
from typing import Optional, Tuple

from albert_tf.core import errors
from albert_tf.core import io as files
from albert_tf.data.tfrecords import masked_crc

# run_pretraining's --max_sequences_per_row default.
DEFAULT_MAX_SEQUENCES_PER_ROW = 4
# Records packed together by run_pretraining --pack_sequences (albert_tf.data.packing), in
# the order the file holds them.
PACKING_WINDOW = 256
# The length histogram's buckets, by upper bound as a fraction of max_seq_length: up to T/8,
# T/4, T/2, 3T/4, below T, and exactly T (a full record).
BUCKET_UPPER_FRACTIONS = ((1, 8), (1, 4), (1, 2), (3, 4))
NUM_BUCKETS = len(BUCKET_UPPER_FRACTIONS) + 2
# What a created record's lengths suggest: below this gain in real tokens per row, packing's
# masks and bookkeeping are not worth it.
WORTHWHILE_SEQUENCES_PER_ROW = 1.1


def first_fit_decreasing(lengths, row_length, max_sequences_per_row):
  """Packs sequences into rows: longest first, each into the first row (in the order rows were
  opened) with room for it and fewer than max_sequences_per_row sequences, else into a new row.

  Args:
    lengths: the sequences' lengths, each at most row_length.
    row_length: the tokens a row holds (max_seq_length).
    max_sequences_per_row: the most sequences one row holds.

  Returns:
    The rows, each the list of the lengths packed into it, in the order they went in.
  """
  rows = []
  open_rows = []  # [room left, lengths] of the rows that can take another sequence
  for length in sorted(lengths, reverse=True):
    if length > row_length:
      raise ValueError(f"a sequence of {length} tokens does not fit a row of {row_length}")
    for i, row in enumerate(open_rows):
      if row[0] >= length:
        row[0] -= length
        row[1].append(length)
        if len(row[1]) == max_sequences_per_row:
          del open_rows[i]  # later ones keep their order: still first fit
        break
    else:
      row = [row_length - length, [length]]
      rows.append(row[1])
      if max_sequences_per_row > 1:
        open_rows.append(row)
  return rows


def length_bucket(length, max_seq_length):
  """The histogram bucket (0 to NUM_BUCKETS - 1) of a record of `length` real tokens."""
  for k, (num, den) in enumerate(BUCKET_UPPER_FRACTIONS):
    if length * den <= max_seq_length * num:
      return k
  return NUM_BUCKETS - 2 if length < max_seq_length else NUM_BUCKETS - 1


def bucket_bounds(max_seq_length):
  """[(lowest, highest length)] of each histogram bucket for records of max_seq_length."""
  uppers = [max_seq_length * num // den for num, den in BUCKET_UPPER_FRACTIONS]
  uppers += [max_seq_length - 1, max_seq_length]
  return [(0 if k == 0 else uppers[k - 1] + 1, upper) for k, upper in enumerate(uppers)]


@dataclasses.dataclass(frozen=True)
class PaddingStats:
  """What records hold and what packing them would give.

  Args:
    records: the number of records.
    real_tokens: their input_mask ones, summed.
    positions: their input_mask lengths (max_seq_length), summed.
    packed_rows: the rows first_fit_decreasing packs them into, window by window.
    max_seq_length: the records' max_seq_length; None without records or where files differ.
    max_sequences_per_row: the packing's most sequences a row.
    histogram: records per length bucket (length_bucket), or None where not counted.
  """
  records: int
  real_tokens: int
  positions: int
  packed_rows: int
  max_seq_length: Optional[int]
  max_sequences_per_row: int = DEFAULT_MAX_SEQUENCES_PER_ROW
  histogram: Optional[Tuple[int, ...]] = None

  @property
  def mean_length(self):
    return self.real_tokens / self.records if self.records else None

  @property
  def real_token_fraction(self):
    return self.real_tokens / self.positions if self.positions else None

  @property
  def rows_per_record(self):
    return self.packed_rows / self.records if self.records else None

  @property
  def sequences_per_row(self):
    """Records per packed row: the gain in real tokens per row (packed over unpacked)."""
    return self.records / self.packed_rows if self.packed_rows else None

  @classmethod
  def combine(cls, parts):
    """The stats of several files' records together (each file packed on its own)."""
    parts = list(parts)
    lengths = {p.max_seq_length for p in parts if p.records}
    histograms = [p.histogram for p in parts]
    return cls(
        records=sum(p.records for p in parts), real_tokens=sum(p.real_tokens for p in parts),
        positions=sum(p.positions for p in parts), packed_rows=sum(p.packed_rows for p in parts),
        max_seq_length=lengths.pop() if len(lengths) == 1 else None,
        max_sequences_per_row=parts[0].max_sequences_per_row if parts
        else DEFAULT_MAX_SEQUENCES_PER_ROW,
        histogram=None if None in histograms or not parts
        else tuple(map(sum, zip(*histograms))))

  def to_dict(self):
    """The stats and the figures derived from them, for JSON."""
    out = dataclasses.asdict(self)
    out.update(mean_length=self.mean_length, real_token_fraction=self.real_token_fraction,
               rows_per_record=self.rows_per_record, sequences_per_row=self.sequences_per_row,
               packing_window=PACKING_WINDOW)
    if self.histogram is not None:
      bounds = bucket_bounds(self.max_seq_length) if self.max_seq_length else None
      out["histogram"] = [
          dict(bucket=k, records=n, **({"min_length": bounds[k][0], "max_length": bounds[k][1]}
                                       if bounds else {}))
          for k, n in enumerate(self.histogram)]
    return out


class PaddingCounter:
  """Counts records' real lengths in the order they are written, packing each window of
  `window` of them as it fills.

  Args:
    max_seq_length: the records' length (a row's length).
    max_sequences_per_row: the packing's most sequences a row.
    window: the records packed together.
  """

  def __init__(self, max_seq_length, max_sequences_per_row=DEFAULT_MAX_SEQUENCES_PER_ROW,
               window=PACKING_WINDOW):
    self.max_seq_length = max_seq_length
    self.max_sequences_per_row = max_sequences_per_row
    self.window = window
    self.records = 0
    self.real_tokens = 0
    self.packed_rows = 0
    self.histogram = [0] * NUM_BUCKETS
    self._pending = []

  def add(self, length):
    """Counts a record of `length` real tokens."""
    self.records += 1
    self.real_tokens += length
    self.histogram[length_bucket(length, self.max_seq_length)] += 1
    self._pending.append(length)
    if len(self._pending) == self.window:
      self._pack()

  def _pack(self):
    if self._pending:
      self.packed_rows += len(first_fit_decreasing(self._pending, self.max_seq_length,
                                                   self.max_sequences_per_row))
      self._pending = []

  def stats(self):
    """The PaddingStats of the records counted (the last, partial window packed too): call it
    once every record is added."""
    self._pack()
    return PaddingStats(
        records=self.records, real_tokens=self.real_tokens,
        positions=self.records * self.max_seq_length, packed_rows=self.packed_rows,
        max_seq_length=self.max_seq_length if self.records else None,
        max_sequences_per_row=self.max_sequences_per_row, histogram=tuple(self.histogram))


def summary_line(stats):
  """create_pretraining_data's end line on what it wrote (a PaddingStats, histogram optional)."""
  if not stats.records:
    return "wrote 0 records"
  line = (f"wrote {stats.records} records: mean length {stats.mean_length:.1f} of "
          f"{stats.max_seq_length} tokens, real-token fraction {stats.real_token_fraction:.2f}")
  gain = stats.sequences_per_row
  if gain < WORTHWHILE_SEQUENCES_PER_ROW:
    return (f"{line} (packing would fit about {gain:.2f} sequences a row: "
            "run_pretraining --pack_sequences would gain little)")
  return (f"{line} (packing would fit about {gain:.2f} sequences a row, at most "
          f"{stats.max_sequences_per_row}: see run_pretraining --pack_sequences and "
          "tools/padding_report.py)")


# --- Reading TFRecord files of tf.train.Examples, without TensorFlow.

_HEADER = struct.Struct("<QI")  # the data's length, the masked CRC32-C of those 8 bytes
_GZIP_MAGIC = b"\x1f\x8b"
_FEATURE = "input_mask"


def read_records(stream, path):
  """Yields the data of each record of the TFRecord `stream` (uncompressed), checksums checked.

  Args:
    stream: a binary file object at the start of the file.
    path: its path, for the messages.

  Raises:
    errors.DataFormatError: not a TFRecord file, truncated, or a checksum that does not match.
  """
  index = 0
  while True:
    header = stream.read(_HEADER.size)
    if not header:
      return
    whole = len(header) == _HEADER.size
    length, length_crc = _HEADER.unpack(header) if whole else (0, None)
    if not whole or masked_crc(header[:8]) != length_crc:
      if index == 0:
        raise errors.DataFormatError(_not_tfrecord(path, header))
      raise errors.DataFormatError(
          f"{path}: record {index} has a broken header (truncated or corrupt file): copy it "
          "again or regenerate it")
    data = stream.read(length + 4)
    if len(data) < length + 4:
      raise errors.DataFormatError(
          f"{path} ends inside record {index} (a truncated copy?): copy it again or "
          "regenerate it")
    if masked_crc(data[:length]) != struct.unpack("<I", data[length:])[0]:
      raise errors.DataFormatError(
          f"{path}: record {index} fails its checksum (corrupt data): regenerate the file")
    yield data[:length]
    index += 1


def _not_tfrecord(path, header):
  if header.startswith(_GZIP_MAGIC):
    return (f"{path} is gzip-compressed: give the uncompressed TFRecord file (gunzip it), as "
            "create_pretraining_data writes them")
  return (f"{path} is not a TFRecord file (its first bytes are no record header): give the "
          "TFRecord files create_pretraining_data wrote")


def _varint(data, pos):
  value, shift = 0, 0
  while True:
    byte = data[pos]
    pos += 1
    value |= (byte & 0x7F) << shift
    if byte < 0x80:
      return value, pos
    shift += 7


def _fields(data, start, end):
  """Yields (field number, wire type, value) of the protobuf message data[start:end]: value is
  the integer of a varint field, the (start, end) of a length-delimited one, None otherwise."""
  pos = start
  while pos < end:
    key, pos = _varint(data, pos)
    number, wire = key >> 3, key & 7
    if wire == 0:
      value, pos = _varint(data, pos)
    elif wire == 2:
      size, pos = _varint(data, pos)
      value = (pos, pos + size)
      pos += size
    elif wire in (1, 5):
      value = None
      pos += 8 if wire == 1 else 4
    else:
      raise ValueError(f"wire type {wire}")
    if pos > end:
      raise ValueError("a field runs past its message")
    yield number, wire, value


def _messages(data, start, end, number):
  """The (start, end) of each length-delimited field `number` of the message data[start:end]."""
  return [value for n, wire, value in _fields(data, start, end) if n == number and wire == 2]


def _int64_feature(record, name):
  """(values, nonzero values) of the Int64List feature `name` of a serialized tf.train.Example;
  None where it has no such feature. Raises ValueError (IndexError) for malformed data."""
  wanted = name.encode()
  for features in _messages(record, 0, len(record), 1):  # Example.features
    for entry in _messages(record, *features, 1):  # Features.feature, a map's entries
      keys = _messages(record, *entry, 1)
      if keys and record[slice(*keys[-1])] == wanted:
        values = _messages(record, *entry, 2)
        return _int64_values(record, *values[-1]) if values else None
  return None


def _int64_values(record, start, end):
  """(count, nonzero count) of a Feature's int64_list, packed or not; None for another kind."""
  for number, wire, span in _fields(record, start, end):  # Feature
    if number != 3 or wire != 2:
      continue
    count = nonzero = 0
    for field, field_wire, value in _fields(record, *span):  # Int64List
      if field != 1 or field_wire not in (0, 2):
        continue
      if field_wire == 0:
        count, nonzero = count + 1, nonzero + (value != 0)
        continue
      payload = record[value[0]:value[1]]
      if payload.isascii():  # every value one byte: 0 to 127, as a mask's are
        count, nonzero = count + len(payload), nonzero + len(payload) - payload.count(0)
      else:
        pos = 0
        while pos < len(payload):
          v, pos = _varint(payload, pos)
          count, nonzero = count + 1, nonzero + (v != 0)
    return count, nonzero
  return None


def record_lengths(path, open_binary=files.open_binary):
  """Yields (max_seq_length, real length) of each record of a TFRecord file: the number of
  values and of ones in its input_mask feature.

  Args:
    path: the file.
    open_binary: how to open it (files.open_binary: tf.io.gfile only for a path with a scheme).

  Raises:
    errors.DataFormatError: not a TFRecord file of tf.train.Examples with an int64 input_mask.
  """
  with open_binary(path) as stream:
    for index, record in enumerate(read_records(stream, path)):
      try:
        found = _int64_feature(record, _FEATURE)
      except (ValueError, IndexError):
        raise errors.DataFormatError(
            f"{path}: record {index} is not a tf.train.Example: give the TFRecord files "
            "create_pretraining_data wrote") from None
      if found is None:
        raise errors.DataFormatError(
            f"{path}: record {index} has no int64 feature `{_FEATURE}`: give records of "
            "create_pretraining_data (or of a fine-tuning task), which mark real tokens with it")
      yield found


def file_stats(path, max_sequences_per_row=DEFAULT_MAX_SEQUENCES_PER_ROW,
               open_binary=files.open_binary):
  """The PaddingStats of the records of TFRecord file `path` (records_lengths), packed in
  windows of PACKING_WINDOW records in file order.

  Raises:
    errors.DataFormatError: as record_lengths, or records of different max_seq_length.
  """
  counter = None
  for index, (max_seq_length, length) in enumerate(record_lengths(path, open_binary)):
    if counter is None:
      counter = PaddingCounter(max_seq_length, max_sequences_per_row)
    elif max_seq_length != counter.max_seq_length:
      raise errors.DataFormatError(
          f"{path}: record {index} has {max_seq_length} {_FEATURE} values where the first has "
          f"{counter.max_seq_length}: a file holds records of one --max_seq_length; regenerate "
          "it")
    counter.add(length)
  if counter is None:
    return PaddingStats(0, 0, 0, 0, None, max_sequences_per_row, (0,) * NUM_BUCKETS)
  return counter.stats()
