"""The text streams of core.io.open_text: UTF-8 over any binary stream, with an error that
names the file, line and byte where a file is not UTF-8; a GFile as a raw stream."""

import codecs
import io

from albert_tf.core import errors


def not_utf8(path, open_binary, error):
  """errors.DataFormatError for a UnicodeDecodeError met reading `path`: the file is read again
  as bytes (with open_binary(path)) to name where its first invalid byte is (the error itself
  knows only its chunk)."""
  with open_binary(path) as f:
    data = f.read()
  bom = len(codecs.BOM_UTF8) if data.startswith(codecs.BOM_UTF8) else 0
  try:
    data[bom:].decode("utf-8")
    offset = None
  except UnicodeDecodeError as e:
    offset = bom + e.start
  where = ""
  if offset is not None:
    line = data.count(b"\n", 0, offset) + 1
    where = f":{line}: byte {data[offset]:#04x} at offset {offset}"
  return errors.DataFormatError(
      f"{path}{where} is not UTF-8 ({error.reason}): the file must be UTF-8; re-save it as "
      "UTF-8 (e.g. iconv -f latin1 -t utf-8)")


class Utf8Text(io.TextIOWrapper):
  """open_text's reader: utf-8-sig, with a decoding error raised as errors.DataFormatError.

  Args:
    path: the file's path, for the error.
    raw: its binary stream.
    open_binary: core.io.open_binary, to read the file again on an error (passed in: this
      module sits below core.io).
    newline, errors: as open()'s.
  """

  def __init__(self, path, raw, open_binary, newline=None, errors=None):
    super().__init__(raw, encoding="utf-8-sig", newline=newline, errors=errors)
    self._path = path
    self._open_binary = open_binary

  def _decoding(self, read, *args):
    try:
      return read(*args)
    except UnicodeDecodeError as e:
      raise not_utf8(self._path, self._open_binary, e) from None

  def read(self, size=-1):
    return self._decoding(super().read, size)

  def readline(self, size=-1):
    return self._decoding(super().readline, size)

  def readlines(self, hint=-1):
    return self._decoding(super().readlines, hint)

  def __next__(self):
    return self._decoding(super().__next__)


class RemoteReader(io.RawIOBase):
  """A GFile as the raw stream io.TextIOWrapper reads (GFile has no readinto)."""

  def __init__(self, gfile):
    super().__init__()
    self._file = gfile

  def readable(self):
    return True

  def readinto(self, buffer):
    data = self._file.read(len(buffer))
    buffer[:len(data)] = data
    return len(data)

  def close(self):
    if not self.closed:
      self._file.close()
    super().close()
