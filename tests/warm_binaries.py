"""The binaries and tools run from a warm start, for the tests whose subject is what a binary or
tool does rather than how it starts: each test process keeps a server (tests/warm_server.py) of
each flavor that has loaded TensorFlow, Keras and albert_tf's jobs as a binary's main() does, and
forks a child per run that runs `python -m albert_tf.<module> <flags>` (run_warm) or
`python3 <script> <flags>` (run_script) in itself. The child is a process of its own, as a fresh
one would be: its own main, flags, exit status, stdout, stderr and files; what it saves is the
~3-4 CPU-seconds a fresh interpreter spends on those imports.

What only a fresh interpreter shows runs cold (helpers.run_binary chooses; run_script's callers
ask): what TensorFlow prints while it loads (tests/end_to_end/test_quiet_binaries.py asks for
cold runs), that --help and the tools load no TensorFlow, a binary that runs without TensorFlow
(create_pretraining_data), and a run whose environment would have TensorFlow load otherwise than
the server did (warm_environment).
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

# Variables TensorFlow (or its libraries) read while loading: a run that would see another value of
# one than the server loaded with runs cold.
READ_AT_LOAD = ("TF_", "CUDA", "XLA_", "OMP_", "KMP_", "MKL", "ONEDNN", "PYTHON", "LD_")
FLAVORS = ("training", "serving")
_HELP = ("--help", "--helpfull", "--helpshort")

_servers = {}
_lock = threading.RLock()


def warm_environment(env, launch_env, startup_env):
  """The environment a fresh process given `env` has once its start-up has run (`env` plus each
  start-up variable it leaves unset: the start-up sets a variable only where it is unset,
  warm_server.startup_variables), or None where that process would load TensorFlow otherwise
  than a server launched with `launch_env` whose start-up set `startup_env` did: a variable of
  READ_AT_LOAD that the two do not agree on."""
  fresh = dict(startup_env, **env)
  loaded = dict(launch_env, **startup_env)
  differ = [k for k in set(fresh) | set(loaded)
            if k.startswith(READ_AT_LOAD) and fresh.get(k) != loaded.get(k)]
  return None if differ else fresh


def module_flavor(module):
  return "training" if module in TRAINING else "serving"


def _fits(flavor, env):
  """Whether a run with `env` shows the same from the flavor's server as from a fresh process."""
  running = _servers.get(flavor)
  if running is not None and running.process.poll() is None:
    return running.environment(env) is not None
  # The server, started for this run, will be launched with os.environ as it is now: whatever
  # its start-up sets, a request that agrees with that on READ_AT_LOAD agrees with what it loads
  # (warm_environment). One that does not needs the start-up's variables to tell: cold, rather
  # than start a server only to answer.
  return warm_environment(env, os.environ, {}) is not None


def can_run_warm(module, flags, env):
  """Whether a run of albert_tf.<module> with these flags and environment shows the same from a
  warm start as from a fresh interpreter."""
  if module not in WARM or any(f in _HELP for f in flags):
    return False
  return _fits(module_flavor(module), env)


class _Server:
  """One warm server process and its log file."""

  def __init__(self, flavor):
    self.log = tempfile.NamedTemporaryFile(prefix=f"warm_{flavor}_", suffix=".log", delete=False)
    self.process = subprocess.Popen([sys.executable, SERVER, flavor], cwd=REPO_ROOT,
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    stderr=self.log)
    ready = self._read(timeout=300)
    if not isinstance(ready, dict):
      raise RuntimeError(f"the warm server did not start: {self.tail()}")
    # The environment it loaded TensorFlow with: launched with the first, its start-up added the
    # second.
    self.launch_env, self.startup_env = ready["launch_env"], ready["startup_env"]

  def environment(self, env):
    """warm_environment of `env` for this server: its children's os.environ, or None."""
    return warm_environment(env, self.launch_env, self.startup_env)

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

  def run(self, target, flags, env, cwd, timeout):
    """Runs `target` ({"module": name} or {"script": path}) in a child; its CompletedProcess
    (args as the fresh interpreter's command line would be: the caller sets them)."""
    fresh = self.environment(env)
    if fresh is None:
      raise ValueError("this environment differs from the warm server's in a variable "
                       f"TensorFlow reads while loading ({READ_AT_LOAD}): run it cold")
    with tempfile.TemporaryDirectory(prefix="warm_run_") as directory:
      out, err = os.path.join(directory, "stdout"), os.path.join(directory, "stderr")
      write_message(self.process.stdin, dict(
          target, argv=list(flags), cwd=cwd, env=fresh,
          added=sorted(k for k in self.startup_env if k not in env), stdout=out, stderr=err))
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
    args = [sys.executable] + (["-m", target["module"]] if "module" in target
                               else [target["script"]]) + list(flags)
    if timed_out:
      raise subprocess.TimeoutExpired(args, timeout, output=stdout, stderr=stderr)
    return subprocess.CompletedProcess(args, status, stdout, stderr)

  def close(self):
    self.process.stdin.close()
    self.process.wait(timeout=60)
    os.unlink(self.log.name)


def server(flavor):
  """This process's warm server of `flavor`, started at the first call (with os.environ as it is
  then)."""
  assert flavor in FLAVORS, flavor
  with _lock:
    running = _servers.get(flavor)
    if running is None or running.process.poll() is not None:
      running = _servers[flavor] = _Server(flavor)
    return running


def run_warm(module, flags, env, timeout):
  """subprocess.CompletedProcess of `python -m albert_tf.<module> <flags>` run in a child of
  this process's warm server for the module's flavor (started at the first run)."""
  with _lock:
    return server(module_flavor(module)).run({"module": f"albert_tf.{module}"}, flags, env,
                                             REPO_ROOT, timeout)


def run_script(script, flags, flavor="serving", env=None, cwd=None, timeout=600, cold=False):
  """subprocess.CompletedProcess of `python3 <script> <flags>` (a tool of tools/), `env` added to
  os.environ, in `cwd` (None: this process's): run in a child of the flavor's warm server where
  that shows the same as a fresh interpreter, else (or with cold=True) in a fresh one.

  `flavor` is the script's: "training" where it turns oneDNN on before TensorFlow loads
  (albert_tf.core.onednn.turn_on_for_training, as the training binaries do) for these flags,
  "serving" where it leaves TensorFlow's default; a warm run in the other one fails, saying so.
  The script's path is made absolute (its sys.argv[0] and __file__ then are, as the tests give
  them).
  """
  script = os.path.abspath(script)
  environment = dict(os.environ, **(env or {}))
  cwd = os.getcwd() if cwd is None else os.fspath(cwd)
  if cold or any(f in _HELP for f in flags) or not _fits(flavor, environment):
    return subprocess.run([sys.executable, script] + list(flags), cwd=cwd, env=environment,
                          capture_output=True, text=True, timeout=timeout, check=False)
  with _lock:
    return server(flavor).run({"script": script}, flags, environment, cwd, timeout)


@atexit.register
def _close_servers():
  for running in _servers.values():
    try:
      running.close()
    except Exception:  # noqa: BLE001 -- a server that already ended needs nothing more
      pass
