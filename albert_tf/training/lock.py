"""One run at a time per output_dir: a lock file naming the process (pid and host) that owns it.

Two runs writing into one output_dir interleave their checkpoints and one run's training is thrown
away without a word, so the second run stops with an error naming the first. A lock left by a run
that was killed (SIGKILL, a lost machine) is taken over, with a log line, when its holder is
provably gone: same host, and no live process with that pid and start time. A lock held from
another host cannot be checked from here; the error says how to remove it.
"""

import atexit
import json
import logging
import os
import socket
import sys
import time

from albert_tf.core import errors, io
from albert_tf.core.io import process_running

logger = logging.getLogger("albert_tf")

LOCK_NAME = "albert_tf.lock"


class OutputDirLockedError(errors.AlbertError, RuntimeError):
  """Another run holds the output_dir's lock."""


def _process_start_time(pid):
  """The start time of process `pid` in clock ticks since boot (Linux), else None: with the pid
  it identifies a process even after the pid is reused."""
  try:
    with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
      # Field 22; the command name (field 2) may hold spaces, so split after its ')'.
      return int(f.read().rsplit(")", 1)[1].split()[19])
  except (OSError, IndexError, ValueError):
    return None


def holder_is_gone(holder):
  """True when the process of a lock record is provably not running (same host only)."""
  if holder.get("host") != socket.gethostname():
    return False
  pid = holder.get("pid")
  if not isinstance(pid, int) or not process_running(pid):
    return True
  started = holder.get("process_start")
  return started is not None and _process_start_time(pid) not in (None, started)


def _describe(holder):
  since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(holder.get("time", 0)))
  return (f"pid {holder.get('pid')} on host {holder.get('host')} (since {since}: "
          f"{holder.get('command', '?')})")


def _read(path):
  try:
    return json.loads(io.read_text(path))
  except ValueError:
    return {}  # written halfway by a killed run: no live holder can be named


def _create_exclusively(path, text):
  """Writes a new file; FileExistsError when it exists (atomic on local file systems; object
  stores offer no exclusive create, so there it is check-then-write)."""
  if io.is_remote(path):
    if io.exists(path):
      raise FileExistsError(path)
    io.write_text_atomically(path, text)
    return
  fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
  with os.fdopen(fd, "w", encoding="utf-8") as f:
    f.write(text)


class OutputDirLock:
  """The lock of one output_dir, held by this process from acquire() to release() (or exit).

  Args:
    output_dir: the run's output directory (it must exist).

  Example:
    lock = OutputDirLock("out").acquire()   # OutputDirLockedError if a run holds it
    ...
    lock.release()
  """

  def __init__(self, output_dir):
    self.path = os.path.join(output_dir, LOCK_NAME)
    self.record = {"pid": os.getpid(), "host": socket.gethostname(), "time": time.time(),
                   "process_start": _process_start_time(os.getpid()),
                   "command": " ".join([os.path.basename(sys.argv[0])] + sys.argv[1:])}
    self.held = False

  def acquire(self):
    """Takes the lock; takes over a stale one. Raises OutputDirLockedError naming the holder
    when another live run holds it."""
    for _ in range(3):  # a stale lock removed, then another starter may win the create
      try:
        _create_exclusively(self.path, json.dumps(self.record))
        self.held = True
        atexit.register(self.release)
        return self
      except FileExistsError:
        try:
          holder = _read(self.path)
          if not holder:  # perhaps being written by a run starting now: look again
            time.sleep(1)
            holder = _read(self.path)
        except FileNotFoundError:
          continue
        if not holder_is_gone(holder) and holder:
          raise OutputDirLockedError(
              f"{os.path.dirname(self.path)} is in use by another run: {_describe(holder)}. Wait "
              f"for it to finish or choose another --output_dir; if that run is gone (another "
              f"host cannot be checked from here), delete {self.path}") from None
        try:
          # Another starter may have taken the stale lock over meanwhile: remove only the very
          # record judged stale (a small window remains on file systems without locks).
          if _read(self.path) != holder:
            continue
          logger.info(f"taking over the stale lock {self.path} of a run that is gone: "
                      f"{_describe(holder) if holder else 'unreadable lock file'}")
          io.remove(self.path)
        except FileNotFoundError:
          pass
    raise OutputDirLockedError(f"could not take the lock {self.path}: other runs keep taking it")

  def release(self):
    """Removes the lock file if this process still holds it."""
    if not self.held:
      return
    self.held = False
    try:
      if _read(self.path).get("pid") == self.record["pid"]:
        io.remove(self.path)
    except FileNotFoundError:
      pass
