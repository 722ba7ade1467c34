"""The package as a user installs it: this checkout's wheel in a virtual environment of its own.

Two kinds of environment:
- plain (the developers' guide: installs are tested without system site packages, which once hid
  a missing dependency): pip installs the wheel and what its metadata declares, nothing else, as
  `pip install .` does for a user (about 2 GB, and a minute or two where pip downloads them);
- over the running interpreter's packages: the new venv sees exactly the site directories of the
  interpreter running the tests, whether that is the system's (as .ci/run installs) or a venv's
  (as the README's set-up makes), so TensorFlow, the pinned dependencies and the extras,
  installed there from requirements.txt, are not installed again; the wheel goes in with
  --no-deps and --ignore-installed, after which every dependency its metadata names is checked
  to be installed at the pinned version. For the docs' commands, which need the extras.
Either way what runs is the wheel's albert_tf, not the checkout's (the tests run it from outside
the checkout, or through its entry points).
"""

import os
import site
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


def _running_site_dirs():
  """The running interpreter's site directories (its user site where enabled, then its
  site-packages), in the order they hold on its sys.path."""
  candidates = set(site.getsitepackages())
  if site.ENABLE_USER_SITE:
    candidates.add(site.getusersitepackages())
  return [path for path in sys.path if path in candidates]


def make_venv(venv_dir, plain=False):
  """A venv at venv_dir with pip, plain or over the running interpreter's packages (see the
  module docstring); returns its python.

  Not `venv --system-site-packages`: that shows the base interpreter's site-packages, which,
  when the tests run in a venv, are not where the pinned packages were installed. Instead a .pth
  file in the new venv adds the running interpreter's site directories with site.addsitedir,
  which also runs their .pth files as they run there. The new venv's own site-packages stays
  first on sys.path, so the wheel's albert_tf is found before the checkout's editable install
  (setuptools' editable finder appends itself to sys.meta_path, after the path finder)."""
  _run([sys.executable, "-m", "venv", str(venv_dir)])
  python = os.path.join(venv_dir, "bin", "python")
  if not plain:
    own_site = _run([python, "-c", "import site; print(site.getsitepackages()[0])"]).stdout.strip()
    with open(os.path.join(own_site, "_running_interpreter_site.pth"), "w",
              encoding="utf-8") as f:
      f.writelines(f"import site; site.addsitedir({path!r})\n" for path in _running_site_dirs())
  return python


def install_in_venv(wheel, venv_dir, plain=False):
  """A venv at venv_dir with `wheel` installed, plain or over the running interpreter's packages
  (see the module docstring); returns its bin/."""
  python = make_venv(venv_dir, plain)
  if plain:
    _run([python, "-m", "pip", "install", "-q", wheel], timeout=1500)
  else:
    _run([python, "-m", "pip", "install", "-q", "--no-deps", "--ignore-installed", "--no-index",
          wheel])
  _run([python, "-c", _CHECK_DEPENDENCIES])
  return os.path.dirname(python)


def env_with(bin_dir):
  """os.environ with bin_dir first on PATH and no PYTHONPATH (which would shadow the wheel)."""
  env = dict(os.environ, PATH=bin_dir + os.pathsep + os.environ.get("PATH", ""))
  env.pop("PYTHONPATH", None)
  return env
