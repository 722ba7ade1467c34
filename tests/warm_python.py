"""`python3` for the docs' command blocks (tests/end_to_end/test_readme_commands.py), run as
`<python> -S tests/warm_python.py <config.json> <python3's arguments>` by the `python3` file that
warm_binaries.python3_shim writes: `python3 -m albert_tf.<binary> ...` (a binary that loads
TensorFlow, warm_binaries.WARM) and `python3 tools/<tool>.py ...` (warm_binaries.WARM_TOOLS) run
as a child of that python's warm server (tests/warm_server.py) on this process's own streams;
this process waits for it, passes it the signals it is sent and exits as it does. Any other
command, and any run whose environment would have TensorFlow load otherwise than the server did,
is handed to the real python3 as given (exec); a tool that starts its work as processes of
sys.executable (warm_binaries.SPAWNING_TOOLS) with this python3 as its sys.executable.

Not a test file. Runs with -S: it imports the standard library and its sibling modules only.
"""

import json
import os
import signal
import socket
import sys

import warm_binaries
import warm_server

_FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1,
              signal.SIGUSR2)


def _run_as_given(python, args):
  """Becomes `python <args>`; a tool of warm_binaries.SPAWNING_TOOLS with this python3 as its
  sys.executable, so that the processes it starts come here too."""
  if args and not args[0].startswith("-") and (
      os.path.basename(args[0]) in warm_binaries.SPAWNING_TOOLS):
    shim = os.path.join(os.path.dirname(os.path.abspath(sys.argv[1])), "python3")
    os.execv(python, [python, "-c", warm_binaries.SCRIPT_UNDER_SHIM, shim] + args)
  os.execv(python, [python] + args)


def main():
  with open(sys.argv[1], encoding="utf-8") as f:
    config = json.load(f)
  args = sys.argv[2:]
  found = warm_binaries.command_target(args)
  served = config["servers"].get(found[2]) if found else None
  fresh = served and warm_binaries.warm_environment(dict(os.environ), served["launch_env"],
                                                    served["startup_env"])
  if not fresh:
    _run_as_given(config["python"], args)
  target, flags, _ = found
  connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
  try:
    connection.connect(served["address"])
  except OSError:  # the server was closed (warm_binaries.MAX_SERVERS): a fresh run instead
    _run_as_given(config["python"], args)
  warm_server.send(connection, warm_binaries.child_request(
      target, flags, os.getcwd(), os.environ, fresh, served["startup_env"]), [0, 1, 2])
  pid, _ = warm_server.receive(connection)
  for signum in _FORWARDED:
    signal.signal(signum, lambda number, _: os.kill(pid, number))
  status, _ = warm_server.receive(connection)
  if status is None:
    sys.exit(f"warm python3: the server ended before its run {pid}")
  if status < 0:  # killed by a signal: end the same way, as the shell expects
    signal.signal(-status, signal.SIG_DFL)
    os.kill(os.getpid(), -status)
  sys.exit(status)


if __name__ == "__main__":
  main()
