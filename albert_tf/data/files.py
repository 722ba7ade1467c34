"""Input file lists from the binaries' comma-separated globs, and atomic text outputs."""

import glob
import os


def expand_input_patterns(patterns):
  """Comma-separated files or globs -> file list (each pattern's matches sorted).

  Remote patterns (gs://, ...) go through tf.io.gfile, imported only then, so that the data tools
  run without TensorFlow. Raises FileNotFoundError naming a pattern that matches nothing.
  """
  files = []
  for pattern in [p for p in patterns.split(",") if p]:
    if "://" in pattern:
      import tensorflow as tf  # pylint: disable=import-outside-toplevel
      matches = sorted(tf.io.gfile.glob(pattern))
    else:
      matches = [m for m in sorted(glob.glob(pattern)) if os.path.isfile(m)]
    if not matches:
      raise FileNotFoundError(f"input file not found: {pattern}")
    files.extend(matches)
  if not files:
    raise FileNotFoundError(f"no input files match {patterns!r}")
  return files


def write_text_atomically(path, text):
  """Writes `<path>.tmp-<pid>` and renames it over path: readers see the old or the new file,
  never a half-written one."""
  tmp = f"{path}.tmp-{os.getpid()}"
  with open(tmp, "w", encoding="utf-8") as f:
    f.write(text)
  os.replace(tmp, path)
