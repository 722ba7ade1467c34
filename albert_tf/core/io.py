"""The one file layer: every file albert_tf reads or writes goes through here.

Local paths use os and open(); paths with a scheme (gs://, ram://, hdfs://, ...) go through
tf.io.gfile, imported only for them, so that the data tools run without TensorFlow and the
training binaries write to Cloud Storage as the original's tf.gfile did. Outputs are written
atomically (a hidden temporary renamed into place); input patterns never match those
temporaries.
"""

import errno
import glob
import hashlib
import io
import json
import logging
import os
import posixpath
import re
import shutil
import tempfile
import uuid
import weakref

from albert_tf.core import errors
from albert_tf.core.text_streams import RemoteReader, Utf8Text

logger = logging.getLogger("albert_tf")

# `.<name>.tmp-<pid>`: the leading dot keeps a half-written file out of the globs that pick the
# outputs (`out/*.tfrecord`, `out/x*`), and the pid keeps concurrent writers apart.
_TEMP_NAME = re.compile(r"^\..+\.tmp-(\d+)$")

# Temporaries this process is writing -> their writer: a second writer of the same path would
# truncate them. Weak, so that a writer dropped without commit() or abort() blocks nothing.
_OPEN_TEMPS = weakref.WeakValueDictionary()


def is_remote(path):
  return "://" in os.fspath(path)


def _gfile():
  import tensorflow as tf
  return tf.io.gfile


def split(path):
  """os.path.split that keeps a scheme's `//` (ram://c.json -> ram://, c.json): os.path's would
  give `ram:`, a local directory."""
  if not is_remote(path):
    return os.path.split(path)
  scheme, rest = path.split("://", 1)
  head, tail = posixpath.split(rest)
  return f"{scheme}://{head}", tail


def dirname(path):
  return split(path)[0]


def abspath(path):
  """os.path.abspath for local paths; a path with a scheme is absolute already (only a trailing
  slash goes, as abspath drops it, so that split() names the last component)."""
  if not is_remote(path):
    return os.path.abspath(path)
  scheme, rest = path.split("://", 1)
  return f"{scheme}://{rest.rstrip('/')}"


def expand_input_patterns(patterns, match_remote=None):
  """Comma-separated files or globs -> file list (each pattern's matches sorted).

  Raises FileNotFoundError naming a pattern that matches nothing. Temporaries of unfinished
  writes (`.<name>.tmp-<pid>`) never match: remote globs, unlike local ones, match dot files.
  `match_remote(pattern)` lists a remote pattern's files (default: tf.io.gfile.glob).
  """
  files = []
  for pattern in [p for p in patterns.split(",") if p]:
    if is_remote(pattern):
      matches = sorted((match_remote or _gfile().glob)(pattern))
    else:
      matches = [m for m in sorted(glob.glob(pattern)) if os.path.isfile(m)]
    matches = [m for m in matches if not _TEMP_NAME.match(os.path.basename(m))]
    if not matches:
      raise FileNotFoundError(f"input file not found: {pattern}")
    files.extend(matches)
  if not files:
    raise FileNotFoundError(f"no input files match {patterns!r}")
  return files


def isdir(path):
  return _gfile().isdir(path) if is_remote(path) else os.path.isdir(path)


def exists(path):
  return _gfile().exists(path) if is_remote(path) else os.path.exists(path)


def listdir(path):
  """The names in directory `path` (sorted). Object stores list subdirectories as `name/`: the
  slash goes, so that names compare as local ones."""
  if is_remote(path):
    return sorted(name.rstrip("/") for name in _gfile().listdir(path))
  return sorted(os.listdir(path))


def glob_files(pattern):
  """Paths matching `pattern` (sorted)."""
  return sorted(_gfile().glob(pattern) if is_remote(pattern) else glob.glob(pattern))


def rmtree(path, ignore_errors=False):
  """Removes directory `path` and everything under it; with ignore_errors, as much as it can,
  silently (a missing path included), as shutil.rmtree's."""
  if not is_remote(path):
    shutil.rmtree(path, ignore_errors=ignore_errors)
    return
  try:
    _gfile().rmtree(path)
  except Exception:
    if not ignore_errors:
      raise


def rmdir(path):
  """Removes the empty directory `path` (OSError when it holds anything, as os.rmdir)."""
  if not is_remote(path):
    os.rmdir(path)
    return
  if listdir(path):
    raise OSError(errno.ENOTEMPTY, os.strerror(errno.ENOTEMPTY), path)
  _gfile().rmtree(path)


def make_temp_dir(directory, prefix):
  """A new, uniquely named directory `<directory>/<prefix>...` (tempfile.mkdtemp's, locally)."""
  if not is_remote(directory):
    return tempfile.mkdtemp(prefix=prefix, dir=directory)
  path = posixpath.join(directory, f"{prefix}{os.getpid()}-{uuid.uuid4().hex[:12]}")
  _gfile().makedirs(path)
  return path


def _not_found_as_file_not_found(call, path):
  """Runs call(); TensorFlow's NotFoundError becomes FileNotFoundError, as for local paths, so
  that callers handle a missing file one way whatever the file system."""
  try:
    return call()
  except Exception as e:
    if type(e).__name__ == "NotFoundError" and type(e).__module__.startswith("tensorflow"):
      raise FileNotFoundError(f"{path}: {getattr(e, 'message', e) or 'not found'}") from e
    raise


def remove(path):
  if is_remote(path):
    _not_found_as_file_not_found(lambda: _gfile().remove(path), path)
  else:
    os.remove(path)


def rename(source, target):
  """Moves `source` over `target` (a file, or a directory onto a new name or an empty
  directory)."""
  if not is_remote(source):
    os.replace(source, target)
  elif _gfile().isdir(source):
    _move_tree(source, target)
  else:
    _gfile().rename(source, target, overwrite=True)


def _move_tree(source, target):
  """Moves a remote directory file by file: object stores have no directory rename (GCS's
  rename moves object by object itself; ram:// would move only the directory's own entry,
  leaving its files behind). The deepest files move first, so that the top-level ones readers
  look for (saved_model.pb) arrive last."""
  gfile = _gfile()
  if gfile.exists(target) and listdir(target):
    raise OSError(errno.ENOTEMPTY, os.strerror(errno.ENOTEMPTY), target)
  directories, files, pending = [""], [], [""]
  while pending:
    relative = pending.pop()
    for name in listdir(posixpath.join(source, relative) if relative else source):
      child = posixpath.join(relative, name) if relative else name
      if gfile.isdir(posixpath.join(source, child)):
        directories.append(child)
        pending.append(child)
      else:
        files.append(child)
  for relative in directories:  # empty ones too (a SavedModel's assets/)
    gfile.makedirs(posixpath.join(target, relative) if relative else target)
  for relative in sorted(files, key=lambda f: (-f.count("/"), f)):
    gfile.rename(posixpath.join(source, relative), posixpath.join(target, relative),
                 overwrite=True)
  gfile.rmtree(source)


def copy(source, target):
  if is_remote(source) or is_remote(target):
    _gfile().copy(source, target, overwrite=True)
  else:
    shutil.copyfile(source, target)


def open_text(path, mode="r", newline=None, errors=None):
  """A text file for reading (UTF-8, a byte-order mark dropped), or appending (utf-8) with mode
  "a"; newline and errors as open()'s. A remote file is read as open() reads a local one (its
  universal newlines, its errors handling), so that both give the same lines.

  A file saved with a BOM (Notepad's "UTF-8") reads as the same file without one: the BOM is no
  part of the first line. Bytes that are not UTF-8 raise errors.DataFormatError naming the file,
  the line and the byte offset (with errors="strict", the default).
  """
  if mode != "r":
    if is_remote(path):
      return _gfile().GFile(path, mode)
    return open(
        path, mode, encoding="utf-8", newline=newline, errors=errors)
  raw = (io.BufferedReader(RemoteReader(_gfile().GFile(path, "rb"))) if is_remote(path)
         else open(path, "rb"))
  return Utf8Text(path, raw, open_binary, newline=newline, errors=errors)


def read_text(path):
  def read():
    with open_text(path) as f:
      return f.read()
  return _not_found_as_file_not_found(read, path)


def load_json(path, what):
  """The JSON value of the file at `path` (json.JSONDecodeError as json.load raises it: the
  caller words what a malformed file means).

  Raises:
    FileNotFoundError: "<what> not found: <path>".
  """
  if not exists(path):
    raise FileNotFoundError(f"{what} not found: {path}")
  with open_text(path) as f:
    return json.load(f)


def sha256(path):
  """The hex SHA-256 of a file's bytes (any file system; read in 1 MiB blocks)."""
  digest = hashlib.sha256()
  with open_binary(path) as f:
    for block in iter(lambda: f.read(1 << 20), b""):
      digest.update(block)
  return digest.hexdigest()


def makedirs(path):
  """Creates directory `path` and its parents where missing ('' is the current directory).

  Raises:
    errors.NotADirectoryPathError: `path` is a file (a data file given as --output_dir).
  """
  if not path:
    return
  if is_remote(path):
    _gfile().makedirs(path)
    return
  try:
    os.makedirs(path, exist_ok=True)
  except FileExistsError:
    # exist_ok spares a directory only. os's "File exists" would read as an output to remove:
    # here it is likely the user's data, to keep.
    what = "a file" if os.path.isfile(path) else "something other than a directory"
    raise errors.NotADirectoryPathError(
        f"{path} is {what}, not a directory: give the path of a directory (a new one, or one "
        "to write into)") from None


def open_binary(path, mode="rb"):
  if is_remote(path):
    return _gfile().GFile(path, mode)
  return open(path, mode)


def temp_path(path):
  directory, name = split(path)
  return os.path.join(directory, f".{name}.tmp-{os.getpid()}")


def remove_quietly(path):
  """Removes `path` if it exists. Never raises: it runs while another error propagates, which must
  stay the one reported; what it cannot remove it logs, for removal by hand."""
  try:
    if is_remote(path):
      gfile = _gfile()
      if gfile.exists(path):
        gfile.remove(path)
    else:
      os.remove(path)
  except FileNotFoundError:
    pass
  except Exception as e:  # noqa: BLE001 -- a cleanup that never hides the real error
    logger.warning("could not remove the temporary file %s (%s): delete it by hand", path, e)


def size_if_local(path):
  """Bytes of a local file; None for a path with a scheme (finding out would cost a request)."""
  return None if is_remote(path) else os.path.getsize(path)


def process_running(pid):
  """Whether process `pid` of this host runs (True when it cannot be known)."""
  if os.name != "posix":
    return True  # os.kill(pid, 0) would terminate it on Windows
  try:
    os.kill(pid, 0)
  except ProcessLookupError:
    return False
  except OSError:  # PermissionError: another user's process
    return True
  return True


def remove_stale_temps(path):
  """Removes the temporaries of `path` left by earlier runs that were killed: those whose pid is
  this process's (an earlier process with the same pid, as in containers) or no running process.
  Local paths only: elsewhere whether the writer still runs is unknown."""
  if is_remote(path):
    return
  directory, name = os.path.split(path)
  for stale in glob.glob(os.path.join(glob.escape(directory), f".{glob.escape(name)}.tmp-*")):
    match = _TEMP_NAME.match(os.path.basename(stale))
    if match and stale not in _OPEN_TEMPS:
      pid = int(match.group(1))
      if pid == os.getpid() or not process_running(pid):
        remove_quietly(stale)


class AtomicFile:
  """A binary file written as `<dir>/.<name>.tmp-<pid>` and renamed to `path` by commit(), so that
  `path` is only ever absent, old or complete. Any failure (in write, commit, or leaving the with
  block with an exception) removes the temporary, and the first error is the one raised."""

  def __init__(self, path):
    self.path = path
    self.tmp = temp_path(path)
    if self.tmp in _OPEN_TEMPS:
      raise errors.UsageError(
          f"{path} is already being written by this process: two outputs have the "
          "same name; give them distinct names")
    self._prepare()
    self._file = self._open_temp()
    _OPEN_TEMPS[self.tmp] = self

  # -- the file operations (a subclass gives them for another file system) ----------------------
  def _prepare(self):
    """Before the temporary is opened: the directory, and the temporaries of killed writers."""
    makedirs(dirname(self.path))
    remove_stale_temps(self.path)

  def _open_temp(self):
    return open_binary(self.tmp, "wb")

  def _publish(self):
    """Closes the temporary (durably) and renames it to path."""
    self._file.flush()
    if not is_remote(self.path):
      os.fsync(self._file.fileno())
    self._file.close()
    if is_remote(self.path):
      _gfile().rename(self.tmp, self.path, overwrite=True)
    else:
      os.replace(self.tmp, self.path)

  def _remove_temp(self):
    remove_quietly(self.tmp)

  # -- the protocol -----------------------------------------------------------------------------
  def write(self, data):
    self._file.write(data)

  def commit(self):
    try:
      self._publish()
    except BaseException:
      self.abort()
      raise
    self._release()

  def abort(self):
    """Removes the temporary; a no-op after commit()."""
    if self._file is None:
      return
    try:
      self._file.close()
    except Exception:  # noqa: BLE001 -- see below
      pass  # flushing the buffer fails again on a full disk; the first error is the one to report
    self._remove_temp()
    self._release()

  def _release(self):
    self._file = None
    _OPEN_TEMPS.pop(self.tmp, None)

  def __enter__(self):
    return self

  def __exit__(self, exc_type, exc, tb):
    if exc_type is None:
      self.commit()
    else:
      self.abort()


def write_text_atomically(path, text):
  """Writes `<dir>/.<name>.tmp-<pid>` and renames it over path: readers see the old or the new
  file, never a half-written one, and a failed write leaves no temporary."""
  with AtomicFile(path) as f:
    f.write(text.encode("utf-8"))
