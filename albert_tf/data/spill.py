"""Records kept on local disk instead of in memory, read back in any order.

create_pretraining_data writes a shard's instances in the original's shuffled order, which is
only known once all of them exist. Serialized as they are made and appended here, they cost
memory only for their offsets (8 bytes each); the records themselves (about 11x the input text)
sit in an unnamed temporary file that the OS removes however the process ends, read back with
pread, so that they go through the page cache and never count against the process's RSS.
"""

from array import array
import os
import tempfile


class RecordSpill:
  """Append-only store of byte strings in an unnamed temporary file.

  Args:
    directory: where the temporary goes (default: tempfile's, i.e. $TMPDIR or /tmp). It needs
      room for every record of one output shard.

  >>> with RecordSpill() as spill:
  ...   spill.append(b"first"); spill.append(b"second")
  ...   list(spill.read_in_order([1, 0]))
  [b'second', b'first']
  """

  def __init__(self, directory=None):
    self._file = tempfile.TemporaryFile(dir=directory, buffering=1 << 20)
    self._ends = array("q")

  def __len__(self):
    return len(self._ends)

  @property
  def size_bytes(self):
    return self._ends[-1] if self._ends else 0

  def append(self, record):
    self._file.write(record)
    self._ends.append(self.size_bytes + len(record))

  def read_in_order(self, order):
    """Yields the records at the indices `order`, in that order."""
    self._file.flush()
    fd = self._file.fileno()
    ends = self._ends
    for index in order:
      begin = ends[index - 1] if index else 0
      record = os.pread(fd, ends[index] - begin, begin)
      if len(record) != ends[index] - begin:
        raise OSError(f"short read from the spill file at record {index}: the temporary in "
                      f"{tempfile.gettempdir()} was truncated")
      yield record

  def close(self):
    self._file.close()

  def __enter__(self):
    return self

  def __exit__(self, exc_type, exc, tb):
    self.close()
