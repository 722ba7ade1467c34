"""Staging directories of exports: an export is written under `.tmp-<stem>-<host>-<pid>` next to
its final name and renamed into place. A killed export leaves its staging directory behind; the
next export into the same place removes it.

Only what is provably abandoned goes: a directory of this host whose process is no longer
running. The host is in the name because a pid means nothing on another machine (an export
directory on a shared disk, or another container); a directory of another host, or of a running
process (another export in progress, or a reused pid), is left alone.
"""

import logging
import os
import re
import socket

from albert_tf import io
from albert_tf.io import process_running

logger = logging.getLogger("albert_tf")

_PREFIX = ".tmp-"


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


def write_directory_atomically(export_dir, write, stale_stems=None, legacy=False):
  """Runs write(staging) on this process's staging directory next to export_dir (created), then
  renames it into place: export_dir is absent, empty or complete. Staging directories of killed
  exports are removed first: those of export_dir's name, or of every name matching the regex
  `stale_stems` (`legacy` as remove_stale_staging_dirs); a failed write removes its own."""
  parent, name = io.split(export_dir)
  io.makedirs(parent)
  remove_stale_staging_dirs(parent, stale_stems or re.escape(name), legacy)
  tmp = staging_dir(parent, name)
  io.rmtree(tmp, ignore_errors=True)
  io.makedirs(tmp)
  try:
    write(tmp)
    if io.exists(export_dir):
      io.rmdir(export_dir)
    io.rename(tmp, export_dir)
  except BaseException:
    io.rmtree(tmp, ignore_errors=True)
    raise
