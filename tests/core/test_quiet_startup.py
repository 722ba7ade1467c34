"""Quiet by default: a script that follows the docs (`import albert_tf`, then a model) prints its
own output, without TensorFlow's start-up notices, and still shows real warnings and errors;
the documentation site's build prints mkdocs's own lines only. Each script runs in a fresh
interpreter: the notices come once per process, and the pytest process has TensorFlow imported
already."""

import os
import re
import subprocess
import sys

import pytest

from albert_tf.core import startup
import tf_log_lines as log
from helpers import REPO_ROOT, TF_STARTUP_NOTICES

# As docs/python-api.md's first example begins, on the quick start's config (no checkpoint).
DOCS_SCRIPT = """
import os
import warnings

import albert_tf
import numpy as np

config = albert_tf.AlbertConfig.from_json_file("data/configs/tiny_quickstart.json")
model = albert_tf.AlbertModel(config)
ids = np.array([[2, 15, 27, 9, 3, 0]], np.int32)
outputs = model({"input_ids": ids, "input_mask": (ids > 0).astype(np.int32),
                 "segment_ids": np.zeros_like(ids)})
print(tuple(outputs["sequence_output"].shape))
warnings.warn("a real problem")
os.write(2, b"E0000 00:00:1796534638.069981   28088 kernel.cc:1] a real error\\n")
"""

# A TensorFlow C++ line: severity letter, date (0000 before absl's initialisation), time, thread.
TF_LOG_LINE = re.compile(r"^[IWEF]\d{4} [\d:.]+ +\d+ ([\w.-]+):\d+\] ")


def run_script(env):
  environ = dict(os.environ)
  environ.pop("TF_CPP_MIN_LOG_LEVEL", None)
  environ.update(env)
  result = subprocess.run([sys.executable, "-c", DOCS_SCRIPT], cwd=REPO_ROOT, env=environ,
                          capture_output=True, text=True, timeout=300)
  assert result.returncode == 0, result.stderr[-3000:]
  assert result.stdout.split("\n")[0] == "(1, 6, 128)"
  return result.stderr


@pytest.mark.slow  # two TensorFlow start-ups
def test_a_docs_script_prints_no_start_up_notice_and_keeps_real_problems():
  # TF_ENABLE_ONEDNN_OPTS=maybe: TensorFlow logs a real C++ warning while its libraries load,
  # among the notices; TF_CPP_MIN_LOG_LEVEL=0 (the user asks for everything) shows them all.
  env = {"TF_ENABLE_ONEDNN_OPTS": "maybe"}
  stderr = run_script(env)
  tf_lines = [line for line in stderr.splitlines() if TF_LOG_LINE.match(line)]
  # The warning (once per copy of TensorFlow's logging code) and the error; no INFO line.
  warnings = [line for line in tf_lines if TF_LOG_LINE.match(line).group(1) == "port.cc"]
  assert all("TF_ENABLE_ONEDNN_OPTS is not set to either" in line for line in warnings), stderr
  assert warnings and tf_lines == warnings + [tf_lines[-1]], stderr
  assert tf_lines[-1].endswith("kernel.cc:1] a real error")
  assert [n for n, notice in TF_STARTUP_NOTICES.items() if notice in stderr] == [], stderr
  assert "UserWarning: a real problem" in stderr

  everything = run_script(dict(env, TF_CPP_MIN_LOG_LEVEL="0"))
  # Which notices come depends on the CPU and the CUDA set-up; with any warning logged that
  # early comes absl's line.
  assert TF_STARTUP_NOTICES["absl"] in everything, everything
  assert "a real error" in everything and "a real problem" in everything
  assert everything.count("TF_ENABLE_ONEDNN_OPTS is not set to either") == len(warnings)


def _kept(lines, no_driver):
  pattern = startup.library_noise_pattern(no_driver)
  if pattern is None:
    return lines
  return [line for line in lines if not re.match(pattern, line.rstrip(b"\n"))]


def test_the_library_hides_notices_only(monkeypatch):
  real = [log.OTHER_ERROR, log.FATAL, log.WARNING, log.PYTHON_WARNING]
  lines = [log.CUINIT_ERROR, log.INFO, log.ABSL, log.INSTRUCTIONS] + real
  monkeypatch.delenv("TF_CPP_MIN_LOG_LEVEL", raising=False)
  assert _kept(lines, no_driver=True) == real
  assert _kept(lines, no_driver=False) == [log.CUINIT_ERROR] + real  # a real error: a driver
  monkeypatch.setenv("TF_CPP_MIN_LOG_LEVEL", "0")
  assert _kept(lines, no_driver=True) == lines  # the user asked for everything


@pytest.mark.slow  # a build of the site
def test_the_docs_build_prints_its_own_lines_only(tmp_path):
  # As a user runs it: no NO_MKDOCS_2_WARNING (the opt-out of the notice box mkdocs-material
  # prints from 9.7.2 on), jieba installed (the chinese extra; the search plugin segments the
  # Chinese page with it).
  environ = {k: v for k, v in os.environ.items() if k != "NO_MKDOCS_2_WARNING"}
  result = subprocess.run(
      [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
      cwd=REPO_ROOT, capture_output=True, text=True, timeout=300, env=environ)
  assert result.returncode == 0, result.stderr[-4000:]
  lines = (result.stdout + result.stderr).splitlines()
  assert lines and all(line.startswith("INFO    -  ") for line in lines), lines
  assert (tmp_path / "site" / "chinese" / "index.html").is_file()
