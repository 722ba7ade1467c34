"""Staging directories of exports: an export is written under `.tmp-<stem>-<host>-<pid>` next to
its final name and renamed into place. A killed export leaves its staging directory behind; the
next export into the same place removes it.

An export's output path is checked before any work (check_output_file, check_output_dir): an
export takes minutes, and what it cannot write must be refused at once, naming the flag the user
gave, not the staging directory or temporary it would have failed on.

Only what is provably abandoned goes: a directory of this host whose process is no longer
running. The host is in the name because a pid means nothing on another machine (an export
directory on a shared disk, or another container); a directory of another host, or of a running
process (another export in progress, or a reused pid), is left alone.
"""

import logging
import os
import re
import socket

from absl import flags

from albert_tf.core import errors
from albert_tf.core import io
from albert_tf.core.io import process_running

logger = logging.getLogger("albert_tf")

_PREFIX = ".tmp-"


class OutputPathError(errors.AlbertError, OSError):
  """An output an export cannot write: a file that exists (unless overwritten), a directory where
  a file goes or a file where a directory goes, a directory that holds files, or a place under a
  file or that cannot be written. One `error:` line, exit status 1, as the other exports'
  refusals of an output that exists."""


def _named(path, flag):
  """How a message names the output: `--flag=path` where a flag gave it, else the path."""
  return f"{flag}={path}" if flag else str(path)


def define_overwrite_flag():
  """--overwrite, of the binaries that write one output file (export_tflite, export_onnx)."""
  flags.DEFINE_bool("overwrite", False,
                    "Replace --output_file when it exists (by default an export refuses to "
                    "overwrite it).")


def _check_parent_writable(path, flag):
  """Refuses a local `path` whose nearest existing directory above it is a file, or is one this
  process cannot write: the export would fail there after its work. On an object store
  (gs://) directories are only name prefixes, and the write itself says what is wrong."""
  if io.is_remote(path):
    return
  parent = os.path.dirname(os.path.abspath(path))
  while not os.path.exists(parent) and os.path.dirname(parent) != parent:
    parent = os.path.dirname(parent)
  if not os.path.isdir(parent):
    raise OutputPathError(f"{_named(path, flag)}: {parent} is a file, not a directory; give a "
                          "path in a directory")
  if not os.access(parent, os.W_OK | os.X_OK):
    raise OutputPathError(f"{_named(path, flag)}: cannot write in {parent} (permission denied); "
                          "give a path in a directory you can write")


def check_output_file(path, overwrite=False, flag=None):
  """Refuses, before any work, an output file `path` that cannot be written as asked: a
  directory, a file that exists (unless `overwrite`), or one under a file or an unwritable
  directory (local paths). `flag` names the flag that gave `path`, for the messages.

  Raises:
    OutputPathError: as above.
  """
  path = os.fspath(path)
  what = _named(path, flag)
  if not io.split(path)[1] or io.isdir(path):
    raise OutputPathError(f"{what} names a directory; give a file name, e.g. "
                          f"{os.path.join(path, 'model')}")
  if io.exists(path) and not overwrite:
    replace = "--overwrite" if flag else "overwrite=True"
    raise OutputPathError(f"{what} exists already; give another path, or {replace} to "
                          "replace it")
  _check_parent_writable(path, flag)


def write_file_atomically(path, data, overwrite=False, flag=None):
  """Writes the bytes `data` as `path` through a temporary in its directory renamed into place
  (io.AtomicFile): `path` is absent, old or complete, and a failure leaves no temporary.

  Raises:
    OutputPathError: as check_output_file (checked again: the work before the write took
      minutes, in which another process may have written `path`), or the write failed (a full
      disk, a read-only file system).
  """
  check_output_file(path, overwrite, flag)
  try:
    with io.AtomicFile(path) as f:
      f.write(data)
  except OSError as e:
    # Named by the user's path, not the temporary the error names.
    raise OutputPathError(f"{_named(path, flag)}: cannot write it ({e.strerror or e}); give a "
                          "path in a directory you can write, with room for it") from e


def check_output_dir(path, flag=None):
  """Refuses, before any work, an export directory `path` that cannot be written: a file, a
  directory that holds files, or one under a file or an unwritable directory (local paths).

  Raises:
    OutputPathError: as above.
  """
  what = _named(path, flag)
  if io.exists(path) and not io.isdir(path):
    raise OutputPathError(f"{what} is a file; give a directory (absent or empty)")
  if io.isdir(path) and io.listdir(path):
    raise OutputPathError(f"{what} exists and is not empty; give an absent or empty directory")
  _check_parent_writable(path, flag)


def staging_dir(parent, stem):
  """This process's staging directory for `stem` under `parent`."""
  return os.path.join(parent, f"{_PREFIX}{stem}-{socket.gethostname()}-{os.getpid()}")


def _staging_pid(name, stem_pattern, legacy):
  """The pid of a staging directory `name` of this host, else None. With `legacy`, also the
  names older exports wrote, `.tmp-<stem>-<pid>` without the host (their exports ran locally)."""
  host = re.escape(socket.gethostname())
  match = re.fullmatch(rf"{re.escape(_PREFIX)}(?:{stem_pattern})-{host}-(\d+)", name)
  if match is None and legacy:
    match = re.fullmatch(rf"{re.escape(_PREFIX)}(?:{stem_pattern})-(\d+)", name)
  return int(match.group(1)) if match else None


def remove_stale_staging_dirs(parent, stem_pattern, legacy=False):
  """Removes the staging directories under `parent` whose stem matches the regex `stem_pattern`
  and whose process, on this host, is not running. Call it before making this process's own: one
  with this process's pid is then an earlier process's (containers reuse pids). Returns the paths
  removed."""
  if not io.isdir(parent):
    return []
  removed = []
  for name in io.listdir(parent):
    pid = _staging_pid(name, stem_pattern, legacy)
    path = os.path.join(parent, name)
    if pid is None or not io.isdir(path):
      continue
    if pid != os.getpid() and process_running(pid):
      continue
    logger.warning("removing %s, left by an export (pid %d) that did not finish", path, pid)
    io.rmtree(path, ignore_errors=True)
    removed.append(path)
  return removed


def checked_export_dir(export_dir):
  """`export_dir` as an absolute path (any file system). Raises FileExistsError when it exists
  and is not empty: an export never mixes with other files."""
  export_dir = io.abspath(export_dir)
  if io.exists(export_dir) and io.listdir(export_dir):
    raise FileExistsError(f"export directory {export_dir} exists and is not empty")
  return export_dir


def _new_staging_dir(export_dir, stale_stems, legacy, flag):
  """Creates this process's staging directory for export_dir, after removing those of killed
  exports (see write_directory_atomically). Raises OutputPathError naming export_dir (and
  `flag`) where its parent cannot be written: the user never named the staging directory."""
  parent, name = io.split(export_dir)
  try:
    io.makedirs(parent)
    remove_stale_staging_dirs(parent, stale_stems or re.escape(name), legacy)
    tmp = staging_dir(parent, name)
    io.rmtree(tmp, ignore_errors=True)
    io.makedirs(tmp)
  except OSError as e:
    raise OutputPathError(f"{_named(export_dir, flag)}: cannot create a directory in {parent} "
                          f"({e.strerror or e}); give a path in a directory you can "
                          "write") from e
  return tmp


def write_directory_atomically(export_dir, write, stale_stems=None, legacy=False, flag=None):
  """Runs write(staging) on this process's staging directory next to export_dir (created), then
  renames it into place: export_dir is absent, empty or complete. Staging directories of killed
  exports are removed first: those of export_dir's name, or of every name matching the regex
  `stale_stems` (`legacy` as remove_stale_staging_dirs); a failed write removes its own. `flag`
  names the flag that gave export_dir, for the messages."""
  tmp = _new_staging_dir(export_dir, stale_stems, legacy, flag)
  try:
    write(tmp)
    if io.exists(export_dir):
      io.rmdir(export_dir)
    io.rename(tmp, export_dir)
  except BaseException:
    io.rmtree(tmp, ignore_errors=True)
    raise
