"""The package as a user installs it: this checkout's wheel in a virtual environment of its own.

Two kinds of environment:
- plain (the developers' guide: installs are tested without system site packages, which once hid
  a missing dependency): pip installs the wheel and what its metadata declares, nothing else, as
  `pip install .` does for a user (about 2 GB, and a minute or two where pip downloads them);
- over the system's packages (--system-site-packages): TensorFlow, the pinned dependencies and
  the extras, installed here from requirements.txt, are not installed again; the wheel goes in
  with --no-deps and --ignore-installed, after which every dependency its metadata names is
  checked to be installed at the pinned version. For the docs' commands, which need the extras.
Either way what runs is the wheel's albert_tf, not the checkout's (the tests run it from outside
the checkout, or through its entry points).
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


def _run(command, timeout=600, **kwargs):
  result = subprocess.run(command, capture_output=True, text=True, timeout=timeout, **kwargs)
  assert result.returncode == 0, (command, result.stdout[-2000:], result.stderr[-3000:])
  return result


def build_wheel(out_dir):
  """Builds this checkout's wheel into out_dir (no network: the installed setuptools builds it)
  and returns its path."""
  _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w",
        str(out_dir), REPO_ROOT])
  (wheel,) = [f for f in os.listdir(out_dir) if f.endswith(".whl")]
  return os.path.join(out_dir, wheel)


def install_in_venv(wheel, venv_dir, plain=False):
  """A venv at venv_dir with `wheel` installed, plain or over the system's packages (see the
  module docstring); returns its bin/."""
  _run([sys.executable, "-m", "venv", str(venv_dir)] + ([] if plain else
                                                         ["--system-site-packages"]))
  bin_dir = os.path.join(venv_dir, "bin")
  python = os.path.join(bin_dir, "python")
  if plain:
    _run([python, "-m", "pip", "install", "-q", wheel], timeout=1500)
  else:
    _run([python, "-m", "pip", "install", "-q", "--no-deps", "--ignore-installed", "--no-index",
          wheel])
  _run([python, "-c", _CHECK_DEPENDENCIES])
  return bin_dir


def env_with(bin_dir):
  """os.environ with bin_dir first on PATH and no PYTHONPATH (which would shadow the wheel)."""
  env = dict(os.environ, PATH=bin_dir + os.pathsep + os.environ.get("PATH", ""))
  env.pop("PYTHONPATH", None)
  return env
