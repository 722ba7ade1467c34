"""Checks a SavedModel's ops against what an older TF Serving registers, or writes that list.

  # Which ops of my export would tensorflow/serving:2.12.0 lack? (exit status 1 if any)
  python tools/serving_ops.py --saved_model=serving/albert/1 \
      --allowlist=tests/testdata/serving_ops_tf2.12.txt

  # The allowlist itself: run with the TensorFlow and tensorflow-text of the target, e.g. in a
  # venv with tensorflow-cpu==2.12.0 tensorflow-text==2.12.1 (writing needs no albert_tf).
  python tools/serving_ops.py --write_allowlist=serving_ops_tf2.12.txt

A mistake is one `error:` line, exit status 2, as the binaries' (albert_tf.core.cli), whose
cli.run is not used here: writing runs where albert_tf may not be installed.
"""

import argparse
import os
import sys


class OneLineErrors(argparse.ArgumentParser):
  """argparse whose usage errors are one `error: ...` line and exit status 2."""

  def error(self, message):
    self.exit(2, f"error: {message}\n")


def registered_ops():
  """Every op type this process's TensorFlow registers, tensorflow-text's included."""
  import tensorflow as tf
  import tensorflow_text
  from tensorflow.core.framework import op_def_pb2
  from tensorflow.python.client import pywrap_tf_session
  ops = op_def_pb2.OpList()
  ops.ParseFromString(pywrap_tf_session.TF_GetBuffer(pywrap_tf_session.TF_GetAllOpList()))
  return tf.__version__, tensorflow_text.__version__, sorted(op.name for op in ops.op)


def write_allowlist(path):
  tf_version, text_version, ops = registered_ops()
  header = (f"# Ops registered by TensorFlow {tf_version} with tensorflow-text {text_version}.\n"
            "# tensorflow/serving 2.12.0 links TF 2.12 and tensorflow-text 2.12.1 (2.13 to 2.19 "
            "the same\n# tensorflow-text with their TF): an export using an op missing here fails "
            "to load there.\n# Written by tools/serving_ops.py --write_allowlist.\n")
  tmp = path + ".tmp"
  with open(tmp, "w", encoding="utf-8") as f:
    f.write(header + "\n".join(ops) + "\n")
  os.replace(tmp, path)
  print(f"wrote {len(ops)} ops of TensorFlow {tf_version} + tensorflow-text {text_version} to "
        f"{path}")


def check(saved_model, allowlist):
  sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
  from albert_tf.export.serving_ops import (
      ops_missing_from, saved_model_ops)
  missing = ops_missing_from(saved_model, allowlist)
  print(f"{saved_model}: {len(saved_model_ops(saved_model))} op types")
  if missing:
    print(f"not registered in {allowlist}: {', '.join(missing)}")
    return 1
  print(f"all registered in {allowlist}")
  return 0


def main():
  parser = OneLineErrors(description=__doc__.split("\n\n")[0])
  parser.add_argument("--saved_model", help="SavedModel directory (<export_dir>/<version>).")
  parser.add_argument("--allowlist", help="Op list to check against.")
  parser.add_argument("--write_allowlist", help="Write this TensorFlow's op list here.")
  args = parser.parse_args()
  if args.write_allowlist:
    directory = os.path.dirname(args.write_allowlist)
    if directory and not os.path.isdir(directory):
      parser.error(f"--write_allowlist: {directory} is not a directory: create it, or give a "
                   "path in an existing one")
    write_allowlist(args.write_allowlist)
    return 0
  if not (args.saved_model and args.allowlist):
    parser.error("give --saved_model and --allowlist, or --write_allowlist")
  problem = saved_model_problem(args.saved_model)
  if problem:
    parser.error(problem)
  if not os.path.isfile(args.allowlist):
    what = "is not a file" if os.path.exists(args.allowlist) else "not found"
    parser.error(f"--allowlist: {args.allowlist} {what}: give an op list file (such as "
                 "tests/testdata/serving_ops_tf2.12.txt)")
  return check(args.saved_model, args.allowlist)


def saved_model_problem(path):
  """What is wrong with --saved_model=`path` (no saved_model.pb in it), or None."""
  if os.path.isfile(os.path.join(path, "saved_model.pb")):
    return None
  versions = sorted((name for name in (os.listdir(path) if os.path.isdir(path) else ())
                     if name.isdigit()
                     and os.path.isfile(os.path.join(path, name, "saved_model.pb"))), key=int)
  if versions:
    return (f"--saved_model: {path} holds versions, not a SavedModel: give a version folder, "
            f"e.g. --saved_model={os.path.join(path, versions[-1])}")
  return (f"--saved_model: {os.path.join(path, 'saved_model.pb')} not found: give a SavedModel "
          "directory (<export_dir>/<version>)")


if __name__ == "__main__":
  sys.exit(main())
