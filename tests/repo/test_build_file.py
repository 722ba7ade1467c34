"""BUILD agrees with the tree: every module and test is in a target, every named file exists,
every dependency resolves."""

import glob as globlib
import os
import re

import pytest

from helpers import REPO_ROOT


def _evaluate_build():
  """Runs BUILD (Starlark here is a Python subset) with stand-ins for the Bazel functions."""
  targets = {}

  def glob(patterns, exclude=()):
    out = set()
    for pattern in patterns:
      for path in globlib.glob(os.path.join(REPO_ROOT, pattern), recursive=True):
        if os.path.isfile(path) and "__pycache__" not in path:
          out.add(os.path.relpath(path, REPO_ROOT))
    return sorted(out - set(exclude))

  def rule(kind):
    def define(name, srcs=(), data=(), deps=(), **_):  # other attributes are not checked
      assert name not in targets, f"duplicate target {name}"
      targets[name] = {"kind": kind, "srcs": list(srcs), "data": list(data), "deps": list(deps)}
    return define

  env = {"load": lambda *a, **k: None, "package": lambda **k: None, "glob": glob,
         "requirement": lambda name: f"@pip//{name}", "py_library": rule("py_library"),
         "py_binary": rule("py_binary"), "py_test": rule("py_test"),
         "sh_binary": rule("sh_binary")}
  with open(os.path.join(REPO_ROOT, "BUILD")) as f:
    exec(compile(f.read(), "BUILD", "exec"), env)
  return targets


@pytest.fixture(scope="module")
def targets():
  return _evaluate_build()


def _tracked_python(pattern):
  return sorted(os.path.relpath(p, REPO_ROOT)
                for p in globlib.glob(os.path.join(REPO_ROOT, pattern), recursive=True)
                if "__pycache__" not in p)


def test_every_module_and_test_has_a_target(targets):
  covered = {(src, t["kind"]) for t in targets.values() for src in t["srcs"]}
  sources = {src for src, _ in covered}
  for module in _tracked_python("albert_tf/**/*.py"):
    assert (module, "py_library") in covered, f"{module} is in no py_library"
  for test in _tracked_python("tests/**/test_*.py"):
    assert (test, "py_test") in covered, f"{test} is in no py_test"
  for tool in _tracked_python("tools/*.py") + _tracked_python("tools/*.sh"):
    assert tool in sources, f"{tool} is in no target"
  binaries = [m for m in _tracked_python("albert_tf/*.py")
              if "__name__ == \"__main__\"" in open(os.path.join(REPO_ROOT, m)).read()]
  for binary in binaries:
    assert (binary, "py_binary") in covered, f"binary {binary} has no py_binary"


def test_named_files_exist(targets):
  for name, target in targets.items():
    for path in target["srcs"] + target["data"]:
      if path.startswith(":"):
        assert path[1:] in targets, f"{name} names unknown target {path}"
      else:
        assert os.path.exists(os.path.join(REPO_ROOT, path)), f"{name} names missing {path}"


def test_deps_resolve(targets):
  with open(os.path.join(REPO_ROOT, "requirements.txt")) as f:
    pinned = {re.split(r"[=<>~ ]", line.strip())[0].lower() for line in f
              if line.strip() and not line.startswith("#")}
  for name, target in targets.items():
    for dep in target["deps"]:
      if dep.startswith(":"):
        assert dep[1:] in targets, f"{name} depends on unknown target {dep}"
      else:
        assert dep.startswith("@pip//") and dep[len("@pip//"):].lower() in pinned, (
            f"{name} depends on {dep}, which requirements.txt does not pin")
