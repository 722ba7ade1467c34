"""The warm start of tests/warm_binaries.py, run as `python3 tests/warm_server.py <flavor>
<socket name>`: loads TensorFlow, Keras and albert_tf's jobs as a binary's main() does (quiet
start-up first; for the "training" flavor, oneDNN turned on first, as the training binaries do;
the "bare" flavor loads TensorFlow alone, as a user's script that serves an export does),
answers "ready" on stdout with the environment it was launched with and the variables its start-up
set, then serves requests on a Unix socket (that name in Linux's abstract namespace) until its
stdin ends. Each request, sent with its three standard streams (file descriptors passed over the
socket), gets a forked child that runs `python -m <module> <argv>`, `python <script> <argv>` or
`python -c <code> <argv>` in itself on those streams; the server answers with the child's pid,
then, when it ends, its exit status. Children run side by side (the workers of one cluster); a
client that hangs up before its child ends has it killed.

Safe to fork: nothing here runs a TensorFlow op or creates a thread pool (importing TensorFlow
lists the devices only), so a child starts as a fresh interpreter would after its imports.
Not a test file. Its protocol (messages, streams passed) is also imported by the clients: this
module loads nothing heavy until main() runs.
"""

import atexit
import importlib
import os
import pickle
import random
import runpy
import select
import signal
import socket
import struct
import sys
import traceback
import types

# What the binaries load before their work starts; loaded here once, not in every child.
PRELOADED = (
    "keras",
    "albert_tf.models",
    "albert_tf.tasks.pretraining.job",
    "albert_tf.training.runner",
    "albert_tf.finetuning.job",
    "albert_tf.tasks.classifier.job",
    "albert_tf.tasks.squad.job",
    "albert_tf.tasks.race.job",
    "albert_tf.tasks.ner.job",
    "albert_tf.export.saved_model",
)

STREAMS = 3  # a request's stdin, stdout and stderr


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


def _receive_exactly(sock, size):
  data = b""
  while len(data) < size:
    chunk = sock.recv(size - len(data))
    if not chunk:
      return None
    data += chunk
  return data


def send(sock, value, fds=()):
  """Sends one pickled message on a connected socket, with `fds` passed along (SCM_RIGHTS)."""
  data = pickle.dumps(value)
  payload = struct.pack(">I", len(data)) + data
  sent = socket.send_fds(sock, [payload], list(fds)) if fds else sock.send(payload)
  sock.sendall(payload[sent:])


def receive(sock, fds=0):
  """(message, [fds]) of the next message on a connected socket sent by send(), or (None, [])
  where the other end hung up."""
  if fds:
    header, received, _, _ = socket.recv_fds(sock, 4, fds)
  else:
    header, received = sock.recv(4), []
  if len(header) < 4:
    rest = _receive_exactly(sock, 4 - len(header)) if header else None
    if rest is None:
      for fd in received:
        os.close(fd)
      return None, []
    header += rest
  (size,) = struct.unpack(">I", header)
  data = _receive_exactly(sock, size)
  return (None, []) if data is None else (pickle.loads(data), received)


def _load(flavor):
  """Loads what the binaries load (the bare flavor: `import tensorflow` and nothing of albert_tf);
  returns the line turn_on_for_training gave (None: it did not turn oneDNN on), for the children
  to give back as a fresh process's call would."""
  if flavor == "bare":
    import tensorflow  # as the first line of a script that serves an export
    return None
  from albert_tf.core import onednn, startup
  turned_on = onednn.turn_on_for_training() if flavor == "training" else None
  startup.quiet_tensorflow_startup()
  import tensorflow  # noqa: F401 -- loaded once here, for every child
  for name in PRELOADED:
    importlib.import_module(name)
  return turned_on


def startup_variables(launch_env, environ):
  """The variables a start-up set: {name: value} of `environ` (after it) that `launch_env` (before
  it) left unset.

  The clients take a start-up to set a variable only where it is unset (quiet_tensorflow_startup's
  setdefault, turn_on_for_training's check), as it then does in every fresh binary whatever its
  environment: a start-up that changes or removes a value it was launched with would do so in a
  fresh binary given that value too, which the clients do not model, so it is refused here.
  """
  changed = sorted(k for k, v in launch_env.items() if environ.get(k) != v)
  if changed:
    raise RuntimeError(f"the start-up changed or removed {changed}: the warm start only models "
                       "a start-up that sets unset variables")
  return {k: v for k, v in environ.items() if k not in launch_env}


def _exit_code(code):
  """The process exit status of SystemExit(code), as the interpreter computes it."""
  if code is None:
    return 0
  if isinstance(code, int):
    return code
  print(code, file=sys.stderr)
  return 1


class _FlavorGuard:
  """Stands in for onednn.turn_on_for_training in a child, where TensorFlow is loaded already (the
  real one then does nothing): answers as the call would in a fresh process of the request's
  environment, and ends a run whose fresh process would load TensorFlow otherwise than this
  server did, which would not be the run a fresh interpreter makes."""

  def __init__(self, flavor, turned_on, added):
    self.flavor, self.turned_on, self.added = flavor, turned_on, added
    self.called = False

  def install(self):
    """Takes onednn.turn_on_for_training's place; what onednn keeps of whether it set its variable
    follows the request's start-up variables."""
    from albert_tf.core import onednn
    onednn._set_here = onednn.VARIABLE in self.added
    onednn.turn_on_for_training = self

  def __call__(self):
    from albert_tf.core import onednn
    first, self.called = not self.called, True
    if self.flavor == "training":
      # A fresh process sets the variable (and says so) where the request left it unset: the
      # start-up variables the client added to its environment.
      return self.turned_on if first and onednn.VARIABLE in self.added else None
    if onednn.VARIABLE not in os.environ and onednn.applies():
      raise SystemExit("warm start: this run turns oneDNN on before TensorFlow loads, which the "
                       "serving server loaded without it: run it in the training flavor")
    return None

  def check_exit(self, code, script):
    """The exit status to give for a script (or -c code: `script` true) of the training flavor
    that ended without asking for oneDNN: its fresh process would have loaded TensorFlow without
    it. (Scripts only: their callers choose the flavor; a training binary asks in running_job
    whenever its flags parse.)"""
    if script and self.flavor == "training" and code == 0 and not self.called:
      print("warm start: this run never turned oneDNN on (albert_tf.core.onednn), which the "
            "training server loaded TensorFlow with: run it in the serving flavor",
            file=sys.stderr)
      return 1
    return code


class _BareGuard:
  """The bare flavor's check: its children run what loads TensorFlow without albert_tf (a script
  serving an export, as a user's client does). A run that imports albert_tf would have started
  it, quiet start-up and oneDNN choice included, after TensorFlow loaded, which no fresh process
  does."""

  def install(self):
    """Nothing to stand in for: albert_tf is not loaded here."""

  def check_exit(self, code, script):
    """`code`, or 1 where the run (module, script or code alike) imported albert_tf."""
    del script
    if "albert_tf" in sys.modules:
      print("warm start: this run imported albert_tf, which the bare server loaded TensorFlow "
            "without: run it in the serving or training flavor", file=sys.stderr)
      return 1
    return code


def _run_child(request, streams, flavor, turned_on):
  """In the forked child: runs the module as `python -m` does, the script as `python <script>`
  does or the code as `python -c` does, on the request's streams, then exits; never returns."""
  code = 1
  try:
    os.chdir(request["cwd"])
    # The request's environment with the start-up's variables, as a fresh binary's after its
    # start-up.
    os.environ.clear()
    os.environ.update(request["env"])
    guard = _BareGuard() if flavor == "bare" else _FlavorGuard(flavor, turned_on,
                                                               request["added"])
    guard.install()
    for fd, stream in enumerate(streams):
      os.dup2(stream, fd)
      os.close(stream)
    script, program = request.get("script"), request.get("code")
    # As `python <script>`, `python -c` and `python -m` set it (a script's folder with its links
    # resolved; "" for -c; the working directory for -m).
    sys.path[0] = (os.path.dirname(os.path.realpath(script)) if script else
                   "" if program is not None else os.getcwd())
    # Random state as a fresh interpreter's, not a copy of the server's shared by every child.
    import numpy  # loaded by the server already
    random.seed()
    numpy.random.seed()
    sys.argv = [script or ("-c" if program is not None else request["module"])] + list(
        request["argv"])
    try:
      if script:
        runpy.run_path(script, run_name="__main__")
      elif program is not None:
        main_module = types.ModuleType("__main__")
        sys.modules["__main__"] = main_module
        exec(compile(program, "<string>", "exec"), main_module.__dict__)
      else:
        runpy.run_module(request["module"], run_name="__main__", alter_sys=True)
      code = 0
    except SystemExit as e:
      code = _exit_code(e.code)
    except BaseException:  # noqa: BLE001 -- printed as the interpreter prints it, status 1
      traceback.print_exc()
      code = 1
    code = guard.check_exit(code, script or program is not None)
    atexit._run_exitfuncs()  # what the interpreter runs at exit
  finally:
    for stream in (sys.stdout, sys.stderr):
      try:
        stream.flush()
      except Exception:  # noqa: BLE001 -- a closed stream has nothing left to flush
        pass
    os._exit(code)


class _Serving:
  """The server's loop: accepts requests, forks their children, answers their pids and exit
  statuses. Single-threaded (select), so that every fork is from a process with no thread of its
  own."""

  def __init__(self, listener, answers, flavor, turned_on):
    self.listener, self.answers, self.flavor, self.turned_on = listener, answers, flavor, turned_on
    self.running = {}   # pidfd -> (pid, connection)
    self.clients = {}   # connection -> pidfd, for connections whose child runs

  def _fork(self, connection):
    request, streams = receive(connection, fds=STREAMS)
    if request is None or len(streams) != STREAMS:
      for fd in streams:
        os.close(fd)
      connection.close()
      return
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
      for fd in [self.listener.fileno(), self.answers.fileno(), connection.fileno(),
                 sys.stdin.fileno(),
                 *self.running, *(c.fileno() for c in self.clients)]:
        os.close(fd)
      _run_child(request, streams, self.flavor, self.turned_on)
    for fd in streams:
      os.close(fd)
    # The log (stderr) says what ran, for the tests and for whoever reads a failed run.
    target = request.get("module") or request.get("script") or "-c"
    print(f"warm server: child {pid} runs {target} {' '.join(request['argv'])}", file=sys.stderr,
          flush=True)
    pidfd = os.pidfd_open(pid)
    self.running[pidfd] = (pid, connection)
    self.clients[connection] = pidfd
    send(connection, pid)

  def _reap(self, pidfd):
    pid, connection = self.running.pop(pidfd)
    del self.clients[connection]
    os.close(pidfd)
    _, status = os.waitpid(pid, 0)
    print(f"warm server: child {pid} ended: {os.waitstatus_to_exitcode(status)}", file=sys.stderr,
          flush=True)
    try:
      send(connection, os.waitstatus_to_exitcode(status))
    except OSError:
      pass  # the client hung up
    connection.close()

  def _hung_up(self, connection):
    """A client that ends before its child: the child is killed (its run was given up)."""
    if connection.recv(4096):
      return  # nothing is sent after the request; read, so that it is not seen again
    pid, _ = self.running[self.clients[connection]]
    try:
      os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
      pass

  def serve(self):
    """Serves until stdin ends (the owner closed it or ended); then kills what still runs."""
    while True:
      watched = [sys.stdin, self.listener, *self.running, *self.clients]
      ready, _, _ = select.select(watched, [], [])
      for item in ready:
        if item is sys.stdin:
          if not os.read(sys.stdin.fileno(), 1):
            for pid, _ in self.running.values():
              os.kill(pid, signal.SIGKILL)
            return
        elif item is self.listener:
          connection, _ = self.listener.accept()
          connection.settimeout(60)
          self._fork(connection)
        elif isinstance(item, int):
          if item in self.running:
            self._reap(item)
        elif item in self.clients:
          self._hung_up(item)


def socket_address(name):
  """The Unix socket address of the server called `name`: in Linux's abstract namespace (a leading
  NUL), so there is no file to clean up and no limit from the temporary folder's path length (a
  socket path holds at most 107 bytes)."""
  return "\0" + name


def main():
  flavor, name = sys.argv[1:3]
  answers = os.fdopen(os.dup(1), "wb")
  os.dup2(2, 1)  # what the imports print goes to the log, not into the answers
  # Taken before the loading: a fresh binary loads the same, so what that sets is its start-up's.
  launch_env = dict(os.environ)
  turned_on = _load(flavor)
  listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
  listener.bind(socket_address(name))
  listener.listen(16)
  write_message(answers, {"launch_env": launch_env,
                          "startup_env": startup_variables(launch_env, os.environ)})
  try:
    _Serving(listener, answers, flavor, turned_on).serve()
  finally:
    listener.close()


if __name__ == "__main__":
  main()
