"""The binaries and tools run from a warm start, for the tests whose subject is what a binary or
tool does rather than how it starts: each test process keeps servers (tests/warm_server.py) that
have loaded TensorFlow, Keras and albert_tf's jobs as a binary's main() does, one per flavor and
per environment TensorFlow loads in (warm_environment), and each forks a child per run that runs
`python -m albert_tf.<module> <flags>` (run_warm, start_warm) or `python3 <script> <flags>`
(run_script) in itself. The child is a process of its own, as a fresh one would be: its own main,
flags, exit status, streams, signals and files, and several run at once (the workers of a
cluster); what it saves is the ~3-4 CPU-seconds a fresh interpreter spends on those imports. The
bare flavor's server has loaded TensorFlow alone: its children are the tests' clients of an
export, which must serve without albert_tf (run_python).

What only a fresh interpreter shows runs cold (helpers.run_binary chooses; run_script's callers
ask): what TensorFlow prints while it loads (tests/end_to_end/test_quiet_binaries.py asks for
cold runs), that --help and the tools load no TensorFlow, and a binary that runs without
TensorFlow (create_pretraining_data).
"""

import atexit
import json
import os
import select
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import threading

import warm_server
from repo_paths import REPO_ROOT, TESTS

SERVER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "warm_server.py")

# The binaries that load TensorFlow whatever their flags; the training ones turn oneDNN on before
# it loads (albert_tf.core.onednn), so they have a server of their own.
TRAINING = {"run_pretraining", "run_classifier", "run_squad_v1", "run_squad_v2", "run_race",
            "run_ner"}
WARM = TRAINING | {"export_saved_model", "export_checkpoints", "export_tfhub", "export_tflite",
                   "export_onnx"}


def _benchmark_flavor(flags):
  """tools/benchmark.py's flavor for these flags: "training" where it times a step (--mode
  forward, train or all, the default, or --compare: its main turns oneDNN on for them), else
  "serving"; None where the flags do not say plainly (a flagfile, a value after a space)."""
  if any(f in ("--mode", "--compare") or f.startswith("--flagfile") for f in flags):
    return None
  modes = {f.split("=", 1)[1] for f in flags if f.startswith("--mode=")} or {"all"}
  compare = any(f.startswith("--compare=") and f != "--compare=" for f in flags)
  return "training" if modes & {"forward", "train", "all"} or compare else "serving"


# Tools of tools/ that load TensorFlow, with their flavor (run_script's) or a function of their
# flags giving it (None: the run starts as given). The processes tools/benchmark.py starts itself
# (`python -c`) start as given: they load a SavedModel without albert_tf, time a portable
# runtime without TensorFlow, or measure a fresh process's memory.
WARM_TOOLS = {"sentence_objectives.py": "training", "benchmark.py": _benchmark_flavor,
              "matmul_chain.py": "serving", "kerashub_bench.py": "serving",
              # a part of the check, in a process of its own (the check itself loads none)
              "device_check.py": lambda flags: "serving" if any(
                  f.startswith("--part=") for f in flags) else None}

# Tools that start their work as processes of sys.executable: python3_shim's python3 runs them
# (where they do not start warm themselves) with itself as their sys.executable, so that those
# processes start warm where they can.
SPAWNING_TOOLS = {"cpu_check.py", "run_seeds.py", "device_check.py"}

# Variables TensorFlow (or its libraries) read while loading: a run is served by a server that
# loaded with the same values of these. TF_CONFIG is read when a strategy is built, not then.
READ_AT_LOAD = ("TF_", "CUDA", "XLA_", "OMP_", "KMP_", "MKL", "ONEDNN", "PYTHON", "LD_")
READ_LATER = ("TF_CONFIG",)
# "bare": TensorFlow alone, for the scripts that load an export without albert_tf, as a user's
# client does (warm_server._BareGuard ends a run that imports albert_tf).
FLAVORS = ("training", "serving", "bare")
# Servers kept by one test process (each holds a loaded TensorFlow): past that, the least
# recently used idle one is closed.
MAX_SERVERS = 4
_HELP = ("--help", "--helpfull", "--helpshort")

_servers = []  # the least recently used first
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
            if k.startswith(READ_AT_LOAD) and k not in READ_LATER and fresh.get(k) != loaded.get(k)]
  return None if differ else fresh


def module_flavor(module):
  return "training" if module in TRAINING else "serving"


def command_target(args):
  """(target, flags, flavor) of `python3 <args>` where it can start warm (a binary of WARM as
  `-m albert_tf.<binary>`, or a tool of WARM_TOOLS), else None."""
  if len(args) >= 2 and args[0] == "-m" and args[1].startswith("albert_tf."):
    module = args[1][len("albert_tf."):]
    if can_run_warm(module, args[2:]):
      return {"module": args[1]}, args[2:], module_flavor(module)
  elif args and os.path.basename(args[0]) in WARM_TOOLS and not asks_for_help(args):
    flavor = tool_flavor(args[0], args[1:])
    if flavor:
      return {"script": os.path.abspath(args[0])}, args[1:], flavor
  return None


def tool_flavor(script, flags):
  """The flavor a run of `script` (a tool of WARM_TOOLS) with these flags starts in, or None
  where it runs as given."""
  flavor = WARM_TOOLS[os.path.basename(script)]
  return flavor(flags) if callable(flavor) else flavor


def can_run_warm(module, flags):
  """Whether a run of albert_tf.<module> with these flags shows the same from a warm start as from
  a fresh interpreter (whatever its environment: a server is launched with it where none fits)."""
  return module in WARM and not asks_for_help(flags)


def asks_for_help(flags):
  """Whether these flags ask for a usage text, which a warm start would print as a fresh one does
  but the tests check from a fresh interpreter (that --help loads no TensorFlow)."""
  return any(f in _HELP for f in flags)


def child_request(target, flags, cwd, env, fresh, startup_env):
  """What a warm server is sent to run `target` with these flags in `cwd`: `fresh` the child's
  environment (warm_environment of the run's `env`), and the server's start-up variables that
  `env` left unset, which the child takes as its own start-up's."""
  return dict(target, argv=list(flags), cwd=os.fspath(cwd), env=fresh,
              added=sorted(k for k in startup_env if k not in env))


class WarmProcess:
  """A child of a warm server, handled as a subprocess.Popen is: pid, returncode, poll(), wait(),
  communicate(), send_signal(), terminate(), kill(), and the stdin, stdout and stderr ends of
  the streams asked as subprocess.PIPE. The server, not this process, is its parent: its exit
  status comes from the server."""

  def __init__(self, server, connection, pid, args, streams):
    self._server, self._connection = server, connection
    self.pid, self.args, self.returncode = pid, args, None
    self.stdin, self.stdout, self.stderr = streams

  def _ended(self, timeout):
    ready, _, _ = select.select([self._connection], [], [], timeout)
    if not ready:
      return False
    status, _ = warm_server.receive(self._connection)
    self._connection.close()
    self._server.running -= 1
    if status is None:
      raise RuntimeError(f"the warm server ended before its child {self.pid}: "
                         f"{self._server.tail()}")
    self.returncode = status
    return True

  def poll(self):
    if self.returncode is None:
      self._ended(0)
    return self.returncode

  def wait(self, timeout=None):
    if self.returncode is None and not self._ended(timeout):
      raise subprocess.TimeoutExpired(self.args, timeout)
    return self.returncode

  def communicate(self, input=None, timeout=None):
    """(stdout, stderr) read to their ends (None where not a pipe), once the child has ended."""
    if self.stdin is not None:
      if input:
        self.stdin.write(input)
      self.stdin.close()
    outputs = [None, None]

    def read(index, stream):
      outputs[index] = stream.read()

    readers = [threading.Thread(target=read, args=(i, s), daemon=True)
               for i, s in enumerate((self.stdout, self.stderr)) if s is not None]
    for reader in readers:
      reader.start()
    self.wait(timeout)
    for reader in readers:
      reader.join(timeout)
      if reader.is_alive():
        raise subprocess.TimeoutExpired(self.args, timeout)
    for stream in (self.stdout, self.stderr):
      if stream is not None:
        stream.close()
    return tuple(outputs)

  def send_signal(self, signum):
    if self.poll() is None:
      os.kill(self.pid, signum)

  def terminate(self):
    self.send_signal(signal.SIGTERM)

  def kill(self):
    self.send_signal(signal.SIGKILL)


def _child_streams(stdin, stdout, stderr):
  """([the child's fds], [fds to close here once sent], [this process's ends]) for the three
  streams, each None (this process's), subprocess.PIPE, subprocess.DEVNULL, a file or an fd."""
  given, close, ends = [], [], []
  for fd, (stream, reading) in enumerate(((stdin, True), (stdout, False), (stderr, False))):
    end = None
    if stream is None:
      child = fd
    elif stream == subprocess.PIPE:
      read, write = os.pipe()
      child, mine = (read, write) if reading else (write, read)
      end = open(mine, "w" if reading else "r", encoding="utf-8", errors="replace")
      close.append(child)
    elif stream == subprocess.DEVNULL:
      child = os.open(os.devnull, os.O_RDONLY if reading else os.O_WRONLY)
      close.append(child)
    else:
      child = stream if isinstance(stream, int) else stream.fileno()
    given.append(child)
    ends.append(end)
  return given, close, ends


class _Server:
  """One warm server process, its socket and its log file."""

  def __init__(self, flavor, env, python):
    self.flavor, self.python, self.running = flavor, python, 0
    self.log = tempfile.NamedTemporaryFile(prefix=f"warm_{flavor}_", suffix=".log", delete=False)
    name = "albert_tf_" + os.path.basename(self.log.name)[:-len(".log")]
    self.address = warm_server.socket_address(name)
    self.process = subprocess.Popen([python, SERVER, flavor, name],
                                    cwd=REPO_ROOT, env=env, stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, stderr=self.log)
    ready, _, _ = select.select([self.process.stdout], [], [], 300)
    message = warm_server.read_message(self.process.stdout) if ready else None
    if not isinstance(message, dict):
      raise RuntimeError(f"the warm server did not start: {self.tail()}")
    # The environment it loaded TensorFlow with: launched with the first, its start-up added the
    # second.
    self.launch_env, self.startup_env = message["launch_env"], message["startup_env"]

  def alive(self):
    return self.process.poll() is None

  def environment(self, env):
    """warm_environment of `env` for this server: its children's os.environ, or None."""
    return warm_environment(env, self.launch_env, self.startup_env)

  def tail(self):
    with open(self.log.name, encoding="utf-8", errors="replace") as f:
      return f.read()[-3000:]

  def start(self, target, flags, env, cwd, stdin=None, stdout=None, stderr=None):
    """A WarmProcess running `target` ({"module": name}, {"script": path} or {"code": text}) with
    these flags, environment, working directory and streams (as subprocess.Popen takes them); its
    args are the fresh interpreter's command line."""
    fresh = self.environment(env)
    if fresh is None:
      raise ValueError("this environment differs from the warm server's in a variable "
                       f"TensorFlow reads while loading ({READ_AT_LOAD}): run it cold")
    args = [sys.executable] + (["-m", target["module"]] if "module" in target else
                               ["-c", target["code"]] if "code" in target else
                               [target["script"]]) + list(flags)
    given, close, ends = _child_streams(stdin, stdout, stderr)
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
      connection.connect(self.address)
      warm_server.send(connection,
                       child_request(target, flags, cwd, env, fresh, self.startup_env), given)
      ready, _, _ = select.select([connection], [], [], 60)
      pid, _ = warm_server.receive(connection) if ready else (None, [])
    finally:
      for fd in close:
        os.close(fd)
    if pid is None:
      connection.close()
      raise RuntimeError(f"the warm server did not start the run: {self.tail()}")
    self.running += 1
    return WarmProcess(self, connection, pid, args, ends)

  def run(self, target, flags, env, cwd, timeout):
    """subprocess.CompletedProcess of `target` run in a child (its output captured), as
    subprocess.run(..., capture_output=True, text=True, timeout=timeout) gives it."""
    with tempfile.TemporaryDirectory(prefix="warm_run_") as directory:
      paths = [os.path.join(directory, name) for name in ("stdout", "stderr")]
      files = [open(path, "w+", encoding="utf-8", errors="replace") for path in paths]
      try:
        process = self.start(target, flags, env, cwd, subprocess.DEVNULL, *files)
        try:
          process.wait(timeout)
        except subprocess.TimeoutExpired:
          process.kill()
          process.wait(60)
          timed_out = True
        else:
          timed_out = False
        stdout, stderr = (f.seek(0) or f.read() for f in files)
      finally:
        for f in files:
          f.close()
    if timed_out:
      raise subprocess.TimeoutExpired(process.args, timeout, output=stdout, stderr=stderr)
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)

  def close(self):
    """Ends the server (the end of its stdin tells it to stop) and lets go of its pipes and log
    here: an unclosed pipe is a ResourceWarning at the test process's exit."""
    try:
      self.process.stdin.close()
      self.process.wait(timeout=60)
    finally:
      self.process.stdout.close()
      self.log.close()
      os.unlink(self.log.name)


def server(flavor, env=None, python=sys.executable):
  """This process's warm server of `flavor` run by `python` for runs with environment `env`
  (None: os.environ): one that loaded TensorFlow as a fresh process given `env` would
  (warm_environment), else a new one launched with `env`, the least recently used idle one
  closed where MAX_SERVERS run."""
  assert flavor in FLAVORS, flavor
  env = dict(os.environ if env is None else env)
  with _lock:
    for i, running in enumerate(_servers):
      if (running.flavor == flavor and running.python == python and running.alive() and
          running.environment(env) is not None):
        _servers.append(_servers.pop(i))  # the most recently used last
        return running
    idle = [s for s in _servers if not s.running or not s.alive()]
    while idle and len(_servers) >= MAX_SERVERS:
      oldest = idle.pop(0)
      _servers.remove(oldest)
      oldest.close()
    started = _Server(flavor, env, python)
    _servers.append(started)
    return started


def start_warm(module, flags, env=None, stdin=None, stdout=None, stderr=None):
  """subprocess.Popen([sys.executable, "-m", f"albert_tf.{module}", *flags], cwd=REPO_ROOT,
  env=env, stdin=..., stdout=..., stderr=..., text=True) started as a child of the module's
  flavor's warm server for `env`: a WarmProcess, which several may run at once (the workers of a
  cluster) and which takes signals."""
  env = dict(os.environ if env is None else env)
  return server(module_flavor(module), env).start(
      {"module": f"albert_tf.{module}"}, flags, env, REPO_ROOT, stdin, stdout, stderr)


def start_python(args, flavor, env=None, cwd=None, stdin=None, stdout=None, stderr=None):
  """subprocess.Popen([sys.executable, *args], ..., text=True) for args `-m <module> ...`,
  `-c <code> ...` or `<script> ...`, started as a child of the flavor's warm server for `env`
  (None: os.environ), in `cwd` (None: the repository root): a WarmProcess. `flavor` as
  run_script's."""
  env = dict(os.environ if env is None else env)
  target, flags = _python_target(args)
  return server(flavor, env).start(target, flags, env, REPO_ROOT if cwd is None else cwd,
                                   stdin, stdout, stderr)


def run_python(args, flavor, env=None, cwd=None, timeout=600):
  """subprocess.run([sys.executable, *args], env=env, cwd=cwd, capture_output=True, text=True,
  timeout=timeout), run as start_python starts it: a subprocess.CompletedProcess."""
  env = dict(os.environ if env is None else env)
  target, flags = _python_target(args)
  return server(flavor, env).run(target, flags, env, REPO_ROOT if cwd is None else os.fspath(cwd),
                                 timeout)


def _python_target(args):
  """(request target, flags) of `python <args>`: `-m <module> ...`, `-c <code> ...` or
  `<script> ...`."""
  if args[0] == "-m":
    return {"module": args[1]}, list(args[2:])
  if args[0] == "-c":
    return {"code": args[1]}, list(args[2:])
  return {"script": os.path.abspath(args[0])}, list(args[1:])


def run_warm(module, flags, env, timeout):
  """subprocess.CompletedProcess of `python -m albert_tf.<module> <flags>` run in a child of
  the module's flavor's warm server for `env` (started at the first such run)."""
  return server(module_flavor(module), env).run({"module": f"albert_tf.{module}"}, flags, env,
                                                REPO_ROOT, timeout)


def run_script(script, flags, flavor="serving", env=None, cwd=None, timeout=600, cold=False):
  """subprocess.CompletedProcess of `python3 <script> <flags>` (a tool of tools/), `env` added to
  os.environ, in `cwd` (None: this process's): run in a child of the flavor's warm server for
  that environment, or in a fresh interpreter with cold=True or for --help.

  `flavor` is the script's: "training" where it turns oneDNN on before TensorFlow loads
  (albert_tf.core.onednn.turn_on_for_training, as the training binaries do) for these flags,
  "serving" where it leaves TensorFlow's default; a warm run in the other one fails, saying so.
  "bare" for a script that loads TensorFlow without albert_tf (a client of an export): a run
  that imports albert_tf there fails, saying so.
  The script's path is made absolute (its sys.argv[0] and __file__ then are, as the tests give
  them).
  """
  script = os.path.abspath(script)
  environment = dict(os.environ, **(env or {}))
  cwd = os.getcwd() if cwd is None else os.fspath(cwd)
  if cold or asks_for_help(flags):
    return subprocess.run([sys.executable, script] + list(flags), cwd=cwd, env=environment,
                          capture_output=True, text=True, timeout=timeout, check=False)
  return server(flavor, environment).run({"script": script}, flags, environment, cwd, timeout)


def python3_shim(directory, python, env, commands):
  """Writes `directory`/python3, which runs `python3 <args>` where command_target takes it as a
  child of `python`'s warm server of its flavor for `env`, and hands any other command to
  `python` as given (tests/warm_python.py); returns `directory`. The servers are those of the
  flavors of `commands` ([args], the commands it will be given), started here where none runs.
  Put it first on a shell's PATH (`env` with it there is still served: PATH is not read while
  TensorFlow loads)."""
  flavors = {found[2] for found in map(command_target, commands) if found}
  servers = {flavor: server(flavor, env, python) for flavor in sorted(flavors)}
  os.makedirs(directory, exist_ok=True)
  config = os.path.join(directory, "warm_python.json")
  with open(config, "w", encoding="utf-8") as f:
    json.dump({"python": python, "servers": {
        flavor: {"address": s.address, "launch_env": s.launch_env, "startup_env": s.startup_env}
        for flavor, s in servers.items()}}, f)
  shim = os.path.join(directory, "python3")
  with open(shim, "w", encoding="utf-8") as f:
    f.write(f'#!/bin/sh\nexec {shlex.quote(python)} -S '
            f'{shlex.quote(os.path.join(TESTS, "warm_python.py"))} {shlex.quote(config)} "$@"\n')
  os.chmod(shim, 0o755)
  return directory


# `python -c` code running the script of its argv[2] (its arguments after it) as `python
# <script>` does, with sys.executable the python3 file of its argv[1] (python3_shim's).
SCRIPT_UNDER_SHIM = (
    "import os, runpy, sys; sys.executable = sys.argv[1]; sys.argv = sys.argv[2:]; "
    "sys.path[0] = os.path.dirname(os.path.realpath(sys.argv[0])); "
    "runpy.run_path(sys.argv[0], run_name='__main__')")


def run_tool_with_warm_children(script, flags, directory, children, timeout=900):
  """subprocess.CompletedProcess of `python3 <script> <flags>` (a tool of SPAWNING_TOOLS) run in
  the repository root by a python3_shim written in `directory`: the processes it starts as
  `-m albert_tf.<binary>` or as a tool of WARM_TOOLS start warm, any other as given. `children`
  are the commands it will start ([args]: the servers of their flavors are started first)."""
  assert os.path.basename(script) in SPAWNING_TOOLS, script
  shim = os.path.join(python3_shim(directory, sys.executable, dict(os.environ), children),
                      "python3")
  return subprocess.run([shim, os.path.abspath(script)] + list(flags), cwd=REPO_ROOT,
                        capture_output=True, text=True, timeout=timeout, check=False)


@atexit.register
def _close_servers():
  for running in _servers:
    try:
      running.close()
    except Exception:  # noqa: BLE001 -- a server that already ended needs nothing more
      pass
