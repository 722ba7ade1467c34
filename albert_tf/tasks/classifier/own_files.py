"""The files of your own classification data (tasks.classifier.own_data), read strictly: CSV,
TSV or JSON lines into rows, each with the line it starts on, so that every error names the file
and line. No TensorFlow.

TSV is read as GLUE's files are (tab-separated, no quoting), CSV with the csv module's quoting
(strict: a stray quote is an error; fields of any size), JSONL one JSON object a line (blank
lines skipped). A byte-order mark and CRLF line ends read as none and LF. A row with more fields
than the header, a header or JSON object naming a field twice, NaN or Infinity in JSON, and a
JSON integer too long for Python to read are errors.
"""

import csv
import json
import os
import sys

from albert_tf.core import errors, io

FORMATS = ("csv", "tsv", "jsonl")
_EXTENSIONS = {".csv": "csv", ".tsv": "tsv", ".jsonl": "jsonl", ".ndjson": "jsonl"}


def file_format(path, data_format=None):
  """The format of `path`: data_format, else its extension's (.csv, .tsv, .jsonl, .ndjson).

  Raises:
    errors.UsageError: an unknown format or extension, naming the flag to give.
  """
  if data_format:
    if data_format not in FORMATS:
      raise errors.UsageError(f"--data_format={data_format}: one of {', '.join(FORMATS)}")
    return data_format
  extension = os.path.splitext(os.fspath(path))[1].lower()
  if extension not in _EXTENSIONS:
    raise errors.UsageError(
        f"cannot tell the format of {path} by its extension {extension or '(none)'}: give "
        f"--data_format ({', '.join(FORMATS)})")
  return _EXTENSIONS[extension]


def read_rows(path, data_format, headerless=False):
  """[(line number, row)] of a data file: a row is a dict (header names or JSON keys) or, for
  a headerless CSV/TSV, a list of fields. The line is where the row starts (1-based).

  Args:
    path: the file.
    data_format: one of FORMATS.
    headerless: a CSV/TSV whose first line is data.

  Raises:
    errors.DataFormatError: a missing file, or a line that cannot be read as one row (file and
      line named).
  """
  if not io.exists(path):
    raise errors.DataFormatError(f"data file not found: {path}")
  if data_format == "jsonl":
    return _jsonl_rows(path)
  _allow_fields_of_any_size()
  # TSV as GLUE's reader (data.read_tsv): tabs, no quoting. CSV strict: without it a quoted field
  # left open swallows every row after it as its text, and `"a"b` reads as `ab`.
  options = {"delimiter": "\t", "quotechar": None} if data_format == "tsv" else {"strict": True}
  # newline="" as GLUE's reader: the csv module splits the lines itself.
  with io.open_text(path, newline="") as f:
    return _csv_rows(csv.reader(f, **options), path, data_format, headerless)


def _allow_fields_of_any_size():
  """Lifts the csv module's field size limit (128 KiB: a long document in one quoted field would
  raise). The limit is a C long, which sys.maxsize overflows where a long has 32 bits (Windows).
  """
  try:
    csv.field_size_limit(sys.maxsize)
  except OverflowError:
    csv.field_size_limit(2**31 - 1)


class _NotOurJson(ValueError):
  """What json.loads' hooks raise for JSON that Python would read but we refuse."""


def _unique_keys(pairs):
  """json's object_pairs_hook: the object as a dict, refusing a key given twice (json.loads
  keeps the last one silently)."""
  row = {}
  for key, value in pairs:
    if key in row:
      raise _NotOurJson(f"the object names {key!r} twice: give each field once")
    row[key] = value
  return row


def _no_constant(name):
  """json's parse_constant: NaN and (-)Infinity are Python's extension, not JSON."""
  raise _NotOurJson(f"{name} is not JSON: give a number or a string")


def _jsonl_rows(path):
  # Lines are split at "\n" alone (the file is read with CRLF as LF): str.splitlines() would
  # also split at U+2028, U+0085 and others, which a JSON string may hold unescaped.
  rows = []
  for number, line in enumerate(io.read_text(path).split("\n"), 1):
    if not line.strip():
      continue
    try:
      row = json.loads(line, object_pairs_hook=_unique_keys, parse_constant=_no_constant)
    except _NotOurJson as e:
      raise errors.DataFormatError(f"{path}:{number}: {e}") from None
    except json.JSONDecodeError as e:
      raise errors.DataFormatError(f"{path}:{number}: not a JSON object: {e}") from None
    except ValueError:  # json's int() of more digits than Python converts (sys.int_info)
      raise errors.DataFormatError(f"{path}:{number}: a JSON number too long to read: write it "
                                   "shorter, or as a string") from None
    if not isinstance(row, dict):
      raise errors.DataFormatError(
          f"{path}:{number}: a JSON line must be an object with named fields, got "
          f"{type(row).__name__}")
    rows.append((number, row))
  return rows


def _csv_rows(reader, path, data_format, headerless):
  """The rows of a csv.reader over `path`: refuses a row with more fields than the header (a
  headerless file: its first row), whose extra fields would shift or drop text silently."""
  rows, start, header, first = [], 1, None, None
  try:
    for fields in reader:
      number, start = start, reader.line_num + 1
      if not fields:
        continue  # a blank line
      if first is None:
        first = (number, len(fields))
        if not headerless:
          header = _header(fields, f"{path}:{number}")
          continue
      elif len(fields) > first[1]:
        raise _too_many_fields(f"{path}:{number}", len(fields), first, headerless, data_format)
      # Missing trailing fields are absent (a missing-column error names them).
      rows.append((number, fields if headerless else dict(zip(header, fields))))
  except csv.Error as e:
    # `start`: the line where the row being read began (a quoted field may span lines).
    raise errors.DataFormatError(
        f"{path}:{start}: not CSV: {e}: enclose a field holding a comma, a quote or a line "
        'break in double quotes, with each quote inside it doubled ("a ""b"" c")') from None
  return rows


def _header(fields, where):
  """A CSV/TSV header's column names; a name given twice is refused (the last one would win)."""
  for i, name in enumerate(fields):
    if name in fields[:i]:
      raise errors.DataFormatError(
          f"{where}: the header names column {name!r} twice: give each column its own name")
  return fields


def _too_many_fields(where, count, first, headerless, data_format):
  line, width = first
  what = "the first row" if headerless else "the header"
  fix = ("TSV has no quoting, so a field cannot hold a tab: remove it, or write the file as CSV "
         "or JSONL" if data_format == "tsv" else
         'enclose a field holding a comma in double quotes ("I liked it, a lot")')
  return errors.DataFormatError(
      f"{where}: {count} fields, but {what} (line {line}) has {width}: {fix}")
