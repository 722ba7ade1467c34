"""Running a tool of tools/ as a user does (`python3 tools/<tool>.py ...`), with TensorFlow made
unimportable (the data tools run without it), and reading its one-line error."""

import os
import subprocess
import sys

from helpers import REPO_ROOT

TOOLS = os.path.join(REPO_ROOT, "tools")

# Runs the tool as `python3 tools/<tool>.py` does (its folder first on sys.path), with
# `import tensorflow` raising ImportError.
_WITHOUT_TENSORFLOW = (
    "import os, runpy, sys\n"
    "sys.modules['tensorflow'] = None\n"
    "sys.argv = sys.argv[1:]\n"
    "sys.path[0] = os.path.dirname(sys.argv[0])\n"
    "runpy.run_path(sys.argv[0], run_name='__main__')\n")


def run_tool(tool, *args, cwd=REPO_ROOT):
  return subprocess.run(
      [sys.executable, "-c", _WITHOUT_TENSORFLOW, os.path.join(TOOLS, tool)] + list(args),
      cwd=cwd, capture_output=True, text=True, timeout=120, check=False)


def error_line(result, exit_status):
  """The one `error: ` line of a tool's failed run, checked to be all it wrote."""
  assert "Traceback" not in result.stderr, result.stderr[-3000:]
  assert result.returncode == exit_status, (result.returncode, result.stderr[-3000:])
  lines = result.stderr.splitlines()
  assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr[-3000:]
  assert result.stdout == "", result.stdout[-2000:]
  return lines[0]
