"""Imports have no side effects; the binaries' quiet_tensorflow_startup() hides TensorFlow's
start-up notices and nothing else. Each case runs in a fresh interpreter: the notices come once
per process, and the pytest process has TensorFlow imported already."""

import ast
import glob
import os
import re
import subprocess
import sys

import pytest

from albert_tf.core import startup
import tf_log_lines as log
from helpers import REPO_ROOT, TF_STARTUP_NOTICES as NOTICES

START_TENSORFLOW = """
import warnings
from albert_tf.core.startup import quiet_tensorflow_startup
quiet_tensorflow_startup()
import tensorflow as tf
print(tf.constant(1).numpy() + 1, type(tf.__loader__).__name__)
warnings.warn("a real problem")
"""


def run_python(code, env):
  """-> (stdout, stderr) of `python -c code` with os.environ updated by env (None: unset)."""
  environ = dict(os.environ)
  for name, value in env.items():
    if value is None:
      environ.pop(name, None)
    else:
      environ[name] = value
  result = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, env=environ,
                          capture_output=True, text=True, timeout=300)
  assert result.returncode == 0, result.stderr[-3000:]
  return result.stdout, result.stderr


def test_import_albert_tf_leaves_the_environment_alone():
  stdout, _ = run_python(
      "import os, sys\n"
      "before = dict(os.environ)\n"
      "import albert_tf, albert_tf.core.startup\n"
      "print(dict(os.environ) == before, 'tensorflow' in sys.modules)\n",
      {"TF_CPP_MIN_LOG_LEVEL": None})
  assert stdout.split() == ["True", "False"]



def test_checkpoint_label_files_and_own_data_readers_load_no_tensorflow():
  # checkpoints/ holds TensorFlow code and the plain-Python label files beside a checkpoint: the
  # package imports its names on first use, so the label files and own-data readers stay light.
  stdout, _ = run_python(
      "import sys\n"
      "import albert_tf.checkpoints.labels, albert_tf.tasks.classifier.own_data\n"
      "import albert_tf.tasks.ner.labels\n"
      "print('tensorflow' in sys.modules)\n"
      "from albert_tf.checkpoints import load_checkpoint\n"
      "print('tensorflow' in sys.modules, load_checkpoint.__module__)\n", {})
  assert stdout.split() == ["False", "True", "albert_tf.checkpoints.formats"]


def test_the_suites_conftest_loads_no_tensorflow():
  # pytest's controlling process (-n 2) imports tests/conftest.py and runs no test: TensorFlow
  # loaded there would cost its start-up and print its notices after the run's summary.
  stdout, _ = run_python(
      "import sys\n"
      f"sys.path[:0] = [{os.path.join(REPO_ROOT, 'tests')!r}, {REPO_ROOT!r}]\n"
      "import conftest\n"
      "print('tensorflow' in sys.modules, 'keras' in sys.modules)\n", {})
  assert stdout.split() == ["False", "False"]


def test_quiet_startup_sets_the_log_level_only_where_the_user_did_not():
  code = ("import os\n"
          "from albert_tf.core.startup import quiet_tensorflow_startup\n"
          "quiet_tensorflow_startup()\n"
          "print(os.environ['TF_CPP_MIN_LOG_LEVEL'])\n")
  assert run_python(code, {"TF_CPP_MIN_LOG_LEVEL": None})[0].split() == ["1"]
  assert run_python(code, {"TF_CPP_MIN_LOG_LEVEL": "2"})[0].split() == ["2"]


@pytest.mark.slow  # two TensorFlow start-ups; the serving client's gRPC test checks one fast
def test_quiet_startup_hides_the_notices_and_keeps_real_warnings():
  # TF_CPP_MIN_LOG_LEVEL=0 (TensorFlow's default, kept as the user's choice) shows what
  # TensorFlow prints on its own here; a bad TF_ENABLE_ONEDNN_OPTS makes TensorFlow log a real
  # C++ warning while its libraries load, next to the notices.
  env = {"TF_ENABLE_ONEDNN_OPTS": "maybe"}
  stdout, loud = run_python(START_TENSORFLOW, dict(env, TF_CPP_MIN_LOG_LEVEL="0"))
  assert stdout.split() == ["2", "SourceFileLoader"]
  shown = [name for name, notice in NOTICES.items() if notice in loud]
  # All five here (x86 with AVX-512, CUDA 13 libraries, no NVIDIA driver); which ones depend on
  # the CPU and the CUDA set-up, but the warning logged that early always brings absl's line.
  assert "absl" in shown, loud

  stdout, quiet = run_python(START_TENSORFLOW, dict(env, TF_CPP_MIN_LOG_LEVEL=None))
  assert stdout.split() == ["2", "SourceFileLoader"]
  assert [name for name, notice in NOTICES.items() if notice in quiet] == [], quiet
  warning = re.compile(r"^W\d{4} .* port\.cc:\d+\] TF_ENABLE_ONEDNN_OPTS is not set to either",
                       re.M)
  assert len(warning.findall(quiet)) == len(warning.findall(loud)) >= 1, quiet
  assert "UserWarning: a real problem" in quiet


def _kept(lines, no_driver, level):
  """The lines quiet_tensorflow_startup's filter lets through at TF_CPP_MIN_LOG_LEVEL=level."""
  old = os.environ.get("TF_CPP_MIN_LOG_LEVEL")
  os.environ["TF_CPP_MIN_LOG_LEVEL"] = level
  try:
    pattern = startup.noise_pattern(no_driver)
  finally:
    if old is None:
      os.environ.pop("TF_CPP_MIN_LOG_LEVEL")
    else:
      os.environ["TF_CPP_MIN_LOG_LEVEL"] = old
  if pattern is None:
    return lines
  return [line for line in lines if not re.match(pattern, line.rstrip(b"\n"))]


def test_the_filter_hides_info_lines_and_cuinit_only_without_a_driver():
  real = [log.OTHER_ERROR, log.WARNING, log.PYTHON_WARNING]
  lines = [log.CUINIT_ERROR, log.INFO, log.ABSL] + real
  assert _kept(lines, no_driver=True, level="1") == real
  assert _kept(lines, no_driver=False, level="1") == [log.CUINIT_ERROR] + real
  assert _kept(lines, no_driver=True, level="0") == lines  # the user asked for everything


def test_what_tensorflow_prints_before_aborting_the_import_is_kept():
  # A failed CHECK in TensorFlow's start-up logs an F line and aborts the process: the filter
  # process, not this one, writes stderr, so the line still comes out.
  result = subprocess.run(
      [sys.executable, "-c",
       "import os\n"
       "from albert_tf.core import startup\n"
       "with startup.stderr_without(startup.noise_pattern(no_driver=True)):\n"
       "  os.write(2, b'I0000 00:00:1795996204.699463  1 port.cc:153] oneDNN custom operations "
       "are on\\n')\n"
       "  os.write(2, b'F0000 00:00:1795996204.699463  1 port.cc:1] Check failed: x == y\\n')\n"
       "  os.abort()\n"],
      cwd=REPO_ROOT, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="1"), capture_output=True,
      timeout=60)
  assert result.returncode != 0
  assert result.stderr.splitlines() == [
      b"F0000 00:00:1795996204.699463  1 port.cc:1] Check failed: x == y"]


# Imports point down: a task (albert_tf/tasks/<name>/) uses these, none of them uses a task.
BELOW_TASKS = ("checkpoints", "data", "export", "finetuning", "layers", "models", "optimization",
               "tokenization", "training")


def _imported_modules(path):
  tree = ast.parse(open(path).read(), path)
  for node in ast.walk(tree):
    if isinstance(node, ast.Import):
      yield from (alias.name for alias in node.names)
    elif isinstance(node, ast.ImportFrom) and node.module:
      yield node.module
      yield from (f"{node.module}.{alias.name}" for alias in node.names)


def test_nothing_below_the_tasks_imports_one():
  for package in BELOW_TASKS:
    for path in glob.glob(os.path.join(REPO_ROOT, "albert_tf", package, "**", "*.py"),
                          recursive=True):
      tasks = [m for m in _imported_modules(path) if m.startswith("albert_tf.tasks")]
      assert not tasks, f"{os.path.relpath(path, REPO_ROOT)} imports {tasks}"


def test_each_task_declares_its_models_without_importing_anything():
  from albert_tf import registry
  packages = registry.task_packages()
  assert {"albert_tf.tasks.classifier", "albert_tf.tasks.race",
          "albert_tf.tasks.squad"} <= set(packages)
  for package in packages:
    path = os.path.join(REPO_ROOT, *package.split("."), "__init__.py")
    assert not list(_imported_modules(path)), f"{package} imports at registry time"
  models = registry.models()
  assert models["AlbertClassifier"] == "albert_tf.tasks.classifier.model"
  assert {"AlbertModel", "AlbertPretrainer", "AlbertSquadV2"} <= set(models)
