"""The package as a user installs it: this checkout's wheel in a virtual environment of its own.

The environment is created with --system-site-packages, so that TensorFlow and the other pinned
dependencies, already installed here from requirements.txt, are not downloaded again (about 2 GB
and a minute per environment). The wheel itself goes in with --no-deps and --ignore-installed,
after checking that every dependency its metadata names is installed at the pinned version, so
what runs is the wheel's albert_tf, not the checkout's (the tests run it from outside the
checkout, or through its entry points).
"""

import os
import subprocess
import sys

from helpers import REPO_ROOT

# Checks, in the environment, that albert_tf's dependencies are installed at the versions its
# metadata pins (its extras' where they are installed).
_CHECK_DEPENDENCIES = """
import importlib.metadata as md, re, sys
bad = []
for requirement in md.requires("albert_tf"):
  pinned = re.match(r"([A-Za-z0-9_.-]+)==([^;\\s]+)", requirement)
  if not pinned:
    continue  # albert_tf[beam,hf], the test extra's own extras: checked as themselves
  name, version = pinned.groups()
  try:
    found = md.version(name)
  except md.PackageNotFoundError:
    found = None
  if found is None and "extra ==" in requirement:
    continue  # an extra not installed here
  if found != version:
    bad.append(f"{name}=={version} (installed: {found})")
print("; ".join(bad) or "ok")
sys.exit(1 if bad else 0)
"""


def _run(command, **kwargs):
  result = subprocess.run(command, capture_output=True, text=True, timeout=600, **kwargs)
  assert result.returncode == 0, (command, result.stdout[-2000:], result.stderr[-3000:])
  return result


def build_wheel(out_dir):
  """Builds this checkout's wheel into out_dir (no network: the installed setuptools builds it)
  and returns its path."""
  _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w",
        str(out_dir), REPO_ROOT])
  (wheel,) = [f for f in os.listdir(out_dir) if f.endswith(".whl")]
  return os.path.join(out_dir, wheel)


def install_in_venv(wheel, venv_dir):
  """A venv at venv_dir with `wheel` installed (see the module docstring); returns its bin/."""
  _run([sys.executable, "-m", "venv", "--system-site-packages", str(venv_dir)])
  bin_dir = os.path.join(venv_dir, "bin")
  python = os.path.join(bin_dir, "python")
  _run([python, "-m", "pip", "install", "-q", "--no-deps", "--ignore-installed", "--no-index",
        wheel])
  _run([python, "-c", _CHECK_DEPENDENCIES])
  return bin_dir


def env_with(bin_dir):
  """os.environ with bin_dir first on PATH and no PYTHONPATH (which would shadow the wheel)."""
  env = dict(os.environ, PATH=bin_dir + os.pathsep + os.environ.get("PATH", ""))
  env.pop("PYTHONPATH", None)
  return env
