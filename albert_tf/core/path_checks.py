"""The paths a binary's flags name, checked before any work: a data file, an input pattern or a
checkpoint that is not there is refused as the flags are (one `error: --flag=...` line, exit 2),
before TensorFlow loads, rather than seconds later from inside the job.

  >>> from albert_tf.core import path_checks
  >>> print(path_checks.checkpoint_problem(
  ...     "no/such/model.ckpt-5"))  # doctest: +ELLIPSIS +NORMALIZE_WHITESPACE
  checkpoint not found: no/such/model.ckpt-5 (no such prefix: no model.ckpt-5.index; no such
  directory). Give a checkpoint prefix ...

Only local paths are looked at: a path with a scheme (gs://, hdfs://) needs TensorFlow's file
system, so the job's own reading refuses it. Imports no TensorFlow.
"""

import os

from albert_tf.core import errors, io

# What a checkpoint of each accepted layout leaves in its directory: a TF checkpoint's state file
# (tf.train.latest_checkpoint reads it) or a fine-tuning run's best (checkpoints.original), a
# Hugging Face directory's weights (checkpoints.hf), a keras-hub preset's files
# (checkpoints.keras_hub). The readers there decide what the directory holds; this only tells a
# directory with none of them, which every reader refuses.
CHECKPOINT_STATE_FILE = "checkpoint"
BEST_CHECKPOINT_INDEX = "model.ckpt-best.index"
HF_WEIGHTS = ("model.safetensors", "model.safetensors.index.json")
KERAS_HUB_FILES = ("config.json", "model.weights.h5", "metadata.json")
_DIRECTORY_MARKERS = (CHECKPOINT_STATE_FILE, BEST_CHECKPOINT_INDEX) + HF_WEIGHTS + KERAS_HUB_FILES
_CHECKPOINT_FORMS = ("a checkpoint prefix whose .index file exists (.../model.ckpt-1000), a "
                     "directory with a `checkpoint` file or model.ckpt-best (a run's output_dir), "
                     "a Hugging Face directory (model.safetensors) or a keras-hub preset")
_TF_FILE_SUFFIXES = (".index", ".meta", ".data-00000-of-00001")


def is_local(path):
  """Whether `path` is given and has no scheme: this module can look at it without TensorFlow."""
  return bool(path) and not io.is_remote(path)


def _prefixes_in(directory):
  """The checkpoint prefixes in a local directory (from their .index files), sorted."""
  return sorted(name[:-len(".index")] for name in os.listdir(directory) if name.endswith(".index"))


def checkpoint_problem(path):
  """Why local `path` is no checkpoint in any layout albert_tf reads (checkpoints.open_checkpoint
  would refuse it), naming the path and the fix; None for a checkpoint, or one it cannot tell
  without reading it (a remote path, a directory with a checkpoint's files: their readers check
  them).

  Args:
    path: --init_checkpoint's value.
  """
  if not is_local(path):
    return None
  path = os.fspath(path)
  if os.path.exists(path + ".index") or (path.endswith(".safetensors") and os.path.isfile(path)):
    return None
  if os.path.isdir(path):
    if any(os.path.exists(os.path.join(path, name)) for name in _DIRECTORY_MARKERS):
      return None
    prefixes = _prefixes_in(path)
    hint = (f"; it holds {', '.join(prefixes[:3])}: give one of them as "
            f"{os.path.join(path, prefixes[-1])}" if prefixes else "")
    return (f"no checkpoint found in directory {path}: no `{CHECKPOINT_STATE_FILE}` file, "
            f"{BEST_CHECKPOINT_INDEX}, {HF_WEIGHTS[0]} or keras-hub preset{hint}. Give "
            f"{_CHECKPOINT_FORMS}")
  for suffix in _TF_FILE_SUFFIXES:
    if path.endswith(suffix) and os.path.exists(path[:-len(suffix)] + ".index"):
      return (f"{path} is one of a checkpoint's files: give its prefix, "
              f"{path[:-len(suffix)]}")
  return (f"checkpoint not found: {path} (no such prefix: no {os.path.basename(path)}.index; no "
          f"such directory). Give {_CHECKPOINT_FORMS}")


def file_problem(path):
  """Why local `path` is no file to read ("file not found", "... is a directory"), or None
  (a file, or a remote path: its reader checks it)."""
  if not is_local(path) or os.path.isfile(path):
    return None
  if os.path.isdir(path):
    return f"{path} is a directory: give the file itself"
  return f"file not found: {path}"


def check_checkpoint(flag, path):
  """Raises errors.UsageError naming --`flag` when its `path` is no checkpoint
  (checkpoint_problem)."""
  problem = checkpoint_problem(path)
  if problem:
    raise errors.UsageError(f"--{flag}={path}: {problem}")


def check_data_file(flag, path, fix, given=None):
  """Raises errors.UsageError when local data file `path` is not there, naming --`flag` (whose
  value is `given`, when the file is one it leads to: --data_dir's MRPC/dev.tsv), the file
  and the fix.

  Args:
    flag: the flag's name.
    path: the file the job would read.
    fix: what to give instead, a clause.
    given: the flag's value when it is not `path` itself.
  """
  if not is_local(path) or os.path.exists(path):
    return
  named = f"--{flag}={given}" if given is not None else f"--{flag}"
  raise errors.UsageError(f"{named}: data file not found: {path}: {fix}")


def check_data_dir(flag, directory, fix, given=None):
  """Raises errors.UsageError when local `directory` is not one, naming --`flag` (whose value is
  `given`, when the directory is one it leads to: --data_dir's RACE/train/middle), the
  directory and the fix."""
  if not is_local(directory) or os.path.isdir(directory):
    return
  what = "is a file, not a directory" if os.path.exists(directory) else "directory not found"
  named = f"--{flag}={given}" if given is not None else f"--{flag}"
  raise errors.UsageError(f"{named}: {what}: {directory}: {fix}")


def in_folder_or_given(directory, folder, name):
  """Where a data set's file `name` is read: `<directory>/<folder>/<name>`, or
  `<directory>/<name>` when `directory` is that folder itself (glue_data/MRPC rather than
  glue_data) and only the latter exists."""
  path = os.path.join(directory, folder, name)
  in_folder = os.path.join(directory, name)
  if not io.exists(path) and io.exists(in_folder):
    return in_folder
  return path


def check_input_patterns(flag, patterns, fix):
  """Raises errors.UsageError naming --`flag` when one of its comma-separated local files or
  globs matches no file (io.expand_input_patterns, the job's own expansion); remote patterns are
  left to the job.

  Args:
    flag: the flag's name.
    patterns: its value.
    fix: what to give instead, a clause.
  """
  local = [pattern for pattern in (patterns or "").split(",") if is_local(pattern)]
  if not local:
    return
  try:
    io.expand_input_patterns(",".join(local))
  except FileNotFoundError as e:
    raise errors.UsageError(f"--{flag}: {e}: {fix}") from None

