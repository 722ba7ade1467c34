"""The warm start of tests/warm_binaries.py, run as `python3 tests/warm_server.py <flavor>`: loads
TensorFlow, Keras and albert_tf's jobs as a binary's main() does (quiet start-up first; for the
"training" flavor, oneDNN turned on first, as the training binaries do), then serves requests
read from stdin: for each, it forks a child that runs `python -m albert_tf.<module> <argv>` in
itself, and answers with the child's pid, then its exit status.

Safe to fork: nothing here runs a TensorFlow op or creates a thread pool (importing TensorFlow
lists the devices only), so a child starts as a fresh interpreter would after its imports.
Not a test file."""

import atexit
import importlib
import os
import pickle
import random
import runpy
import struct
import sys
import traceback

import numpy

# What the binaries load before their work starts; loaded here once, not in every child.
PRELOADED = (
    "keras",
    "albert_tf.models",
    "albert_tf.training.pretraining",
    "albert_tf.training.runner",
    "albert_tf.finetuning.job",
    "albert_tf.tasks.classifier.job",
    "albert_tf.tasks.squad.job",
    "albert_tf.tasks.race.job",
    "albert_tf.tasks.ner.job",
    "albert_tf.export.saved_model",
)


def read_message(stream):
  """The next pickled message of a length-prefixed stream, or None at its end."""
  header = stream.read(4)
  if len(header) < 4:
    return None
  (size,) = struct.unpack(">I", header)
  return pickle.loads(stream.read(size))


def write_message(stream, value):
  data = pickle.dumps(value)
  stream.write(struct.pack(">I", len(data)) + data)
  stream.flush()


def _load(flavor):
  from albert_tf.core import onednn, startup
  if flavor == "training":
    onednn.turn_on_for_training()
  startup.quiet_tensorflow_startup()
  import tensorflow  # noqa: F401 -- loaded once here, for every child
  for name in PRELOADED:
    importlib.import_module(name)


def _exit_code(code):
  """The process exit status of SystemExit(code), as the interpreter computes it."""
  if code is None:
    return 0
  if isinstance(code, int):
    return code
  print(code, file=sys.stderr)
  return 1


def _run_child(request, protocol_fds):
  """In the forked child: runs the binary as `python -m` does, then exits; never returns."""
  code = 1
  try:
    for fd in protocol_fds:
      os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    for fd, path in ((1, request["stdout"]), (2, request["stderr"])):
      target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
      os.dup2(target, fd)
      os.close(target)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    sys.path[0] = os.getcwd()  # as `python -m` sets it
    # Random state as a fresh interpreter's, not a copy of the server's shared by every child.
    random.seed()
    numpy.random.seed()
    sys.argv = [request["module"]] + list(request["argv"])
    try:
      runpy.run_module(request["module"], run_name="__main__", alter_sys=True)
      code = 0
    except SystemExit as e:
      code = _exit_code(e.code)
    except BaseException:  # noqa: BLE001 -- printed as the interpreter prints it, status 1
      traceback.print_exc()
      code = 1
    atexit._run_exitfuncs()  # what the interpreter runs at exit
  finally:
    for stream in (sys.stdout, sys.stderr):
      try:
        stream.flush()
      except Exception:  # noqa: BLE001 -- a closed stream has nothing left to flush
        pass
    os._exit(code)


def main():
  flavor = sys.argv[1]
  requests = sys.stdin.buffer
  answers = os.fdopen(os.dup(1), "wb")
  os.dup2(2, 1)  # what the imports print goes to the log, not into the answers
  _load(flavor)
  write_message(answers, "ready")
  while True:
    request = read_message(requests)
    if request is None:
      return
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
      _run_child(request, (requests.fileno(), answers.fileno()))
    write_message(answers, pid)
    _, status = os.waitpid(pid, 0)
    write_message(answers, os.waitstatus_to_exitcode(status))


if __name__ == "__main__":
  main()
