"""Every Python file of the package, the tools, the tests and the docs' helpers compiles with
warnings as errors: no invalid escape sequence (`"\\p"` in a docstring is a SyntaxWarning in
Python 3.12 and an error in a later Python), no `is` against a literal, nothing Python warns
about at compile time. Compiled in memory (no .pyc written), without importing anything."""

import os
import warnings

import pytest

from repo_paths import REPO_ROOT

FOLDERS = ("albert_tf", "tools", "tests", "docs", "beam_worker")


def _python_files():
  paths = []
  for folder in FOLDERS:
    for root, dirs, files in os.walk(os.path.join(REPO_ROOT, folder)):
      dirs[:] = sorted(d for d in dirs if d != "__pycache__")
      paths += [os.path.join(root, f) for f in sorted(files) if f.endswith(".py")]
  return paths


def test_the_folders_hold_python_files():
  paths = _python_files()
  assert len(paths) > 100, len(paths)
  assert os.path.join(REPO_ROOT, "albert_tf", "__init__.py") in paths


@pytest.mark.parametrize("path", [os.path.relpath(p, REPO_ROOT) for p in _python_files()])
def test_compiles_without_warnings(path):
  with open(os.path.join(REPO_ROOT, path), "rb") as f:
    source = f.read()
  with warnings.catch_warnings():
    warnings.simplefilter("error")
    # A warning raised as an error comes out of compile() as a SyntaxError naming the line.
    try:
      compile(source, path, "exec", dont_inherit=True)
    except (SyntaxError, Warning) as e:
      pytest.fail(f"{path}: {type(e).__name__}: {e}", pytrace=False)
