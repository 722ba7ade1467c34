"""The binaries run from a warm start, for the tests whose subject is what a binary does rather
than how it starts: each test process keeps a server (tests/warm_server.py) that has loaded
TensorFlow, Keras and albert_tf's jobs as a binary's main() does, and forks a child per run that
runs `python -m albert_tf.<module> <flags>` in itself. The child is a process of its own, as a
fresh one would be: its own main, flags, exit status, stdout, stderr and files; what it saves is
the ~3-4 CPU-seconds a fresh interpreter spends on those imports.

What only a fresh interpreter shows runs cold (helpers.run_binary chooses): what TensorFlow prints
while it loads (tests/end_to_end/test_quiet_binaries.py asks for cold runs), that --help and the
tools load no TensorFlow, a binary that runs without TensorFlow (create_pretraining_data), and a
run given environment variables that TensorFlow reads when it loads.
"""

import atexit
import os
import select
import subprocess
import sys
import tempfile
import threading

from repo_paths import REPO_ROOT
from warm_server import read_message, write_message

SERVER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "warm_server.py")

# The binaries that load TensorFlow whatever their flags; the training ones turn oneDNN on before
# it loads (albert_tf.core.onednn), so they have a server of their own.
TRAINING = {"run_pretraining", "run_classifier", "run_squad_v1", "run_squad_v2", "run_race",
            "run_ner"}
WARM = TRAINING | {"export_saved_model", "export_checkpoints", "export_tfhub", "export_tflite",
                   "export_onnx"}

# Variables TensorFlow (or its libraries) read while loading: a run that changes one runs cold.
_READ_AT_LOAD = ("TF_", "CUDA", "XLA_", "OMP_", "KMP_", "MKL", "ONEDNN", "PYTHON", "LD_")

_servers = {}
_lock = threading.Lock()


def can_run_warm(module, flags, env):
  """Whether a run of albert_tf.<module> with these flags and environment shows the same from a
  warm start as from a fresh interpreter."""
  if module not in WARM or any(f in ("--help", "--helpfull", "--helpshort") for f in flags):
    return False
  changed = {k for k in set(env) | set(os.environ) if env.get(k) != os.environ.get(k)}
  return not any(k.startswith(_READ_AT_LOAD) for k in changed)


class _Server:
  """One warm server process and its log file."""

  def __init__(self, flavor):
    self.log = tempfile.NamedTemporaryFile(prefix=f"warm_{flavor}_", suffix=".log", delete=False)
    self.process = subprocess.Popen([sys.executable, SERVER, flavor], cwd=REPO_ROOT,
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    stderr=self.log)
    if self._read(timeout=300) != "ready":
      raise RuntimeError(f"the warm server did not start: {self.tail()}")

  def tail(self):
    with open(self.log.name, encoding="utf-8", errors="replace") as f:
      return f.read()[-3000:]

  def _read(self, timeout):
    ready, _, _ = select.select([self.process.stdout], [], [], timeout)
    if not ready:
      return TimeoutError
    message = read_message(self.process.stdout)
    if message is None:
      raise RuntimeError(f"the warm server ended: {self.tail()}")
    return message

  def run(self, module, flags, env, timeout):
    with tempfile.TemporaryDirectory(prefix="warm_run_") as directory:
      out, err = os.path.join(directory, "stdout"), os.path.join(directory, "stderr")
      write_message(self.process.stdin, {
          "module": f"albert_tf.{module}", "argv": list(flags), "cwd": REPO_ROOT,
          "env": dict(env), "stdout": out, "stderr": err})
      pid = self._read(timeout=60)
      status = self._read(timeout=timeout)
      timed_out = status is TimeoutError
      if timed_out:
        os.kill(pid, 9)
        status = self._read(timeout=60)
      with open(out, encoding="utf-8", errors="replace") as f:
        stdout = f.read()
      with open(err, encoding="utf-8", errors="replace") as f:
        stderr = f.read()
    args = [sys.executable, "-m", f"albert_tf.{module}"] + list(flags)
    if timed_out:
      raise subprocess.TimeoutExpired(args, timeout, output=stdout, stderr=stderr)
    return subprocess.CompletedProcess(args, status, stdout, stderr)

  def close(self):
    self.process.stdin.close()
    self.process.wait(timeout=60)
    os.unlink(self.log.name)


def run_warm(module, flags, env, timeout):
  """subprocess.CompletedProcess of `python -m albert_tf.<module> <flags>` run in a child of
  this process's warm server for the module's flavor (started at the first run)."""
  flavor = "training" if module in TRAINING else "serving"
  with _lock:
    server = _servers.get(flavor)
    if server is None or server.process.poll() is not None:
      server = _servers[flavor] = _Server(flavor)
    return server.run(module, flags, env, timeout)


@atexit.register
def _close_servers():
  for server in _servers.values():
    try:
      server.close()
    except Exception:  # noqa: BLE001 -- a server that already ended needs nothing more
      pass
