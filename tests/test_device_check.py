"""tools/device_check.sh, the one-call accelerator check, works on a CPU with tiny shapes: its
tests run, the mirrored run reproduces the fixture's LAMB updates, the throughput figures add up,
and failures read as failures."""

import json
import os
import re
import subprocess
import sys

import pytest

import albert_tf
from albert_tf.core import hardware
from helpers import ORIGINAL_MODEL, REPO_ROOT

sys.path.insert(0, os.path.join(REPO_ROOT, "tools"))
import benchmark  # noqa: E402  pylint: disable=wrong-import-position
import device_check  # noqa: E402  pylint: disable=wrong-import-position

SCRIPT = os.path.join(REPO_ROOT, "tools", "device_check.sh")


@pytest.mark.slow
def test_tiny_device_check_passes_with_its_figures(tmp_path):
  out = tmp_path / "device_check.json"
  # Part 1 runs one cheap fixture test here: the full list is already in the suite.
  env = dict(os.environ, DEVICE_CHECK_TESTS="tests/test_optimization.py::"
             "test_schedule_matches_fixture_and_formula")
  result = subprocess.run(
      ["bash", SCRIPT, "--tiny", f"--output_json={out}", "--peak_tflops=0.5", "--steps=2",
       "--warmup_steps=1", "--iterations_per_loop=2"],
      cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=600, check=False)
  assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
  assert "DEVICE CHECK (--tiny): PASS" in result.stdout
  figures = json.loads(out.read_text())
  assert figures["passed"] and figures["tiny"] and figures["fixture_tests"] == "passed"

  mirrored = figures["mirrored"]
  assert mirrored["passed"] and mirrored["replicas"] == 2 and len(mirrored["devices"]) == 2
  for key in ("max_abs_diff_losses", "max_abs_diff_weights", "max_abs_diff_slots"):
    assert 0 <= mirrored[key] <= 1e-5, key
  assert len(mirrored["losses"]) == 5  # before each of the 4 updates and after the last

  throughput = figures["throughput"]
  assert throughput["passed"] and throughput["mixed_precision"] == "mixed_bfloat16"
  assert throughput["jit_compile_requested"] and throughput["iterations_per_loop"] == 2
  # XLA asked for; on CPUs with bf16 units, mixed_bfloat16 compiles without it
  # (training/fast_path.py).
  assert throughput["jit_compile"] is (throughput["accelerator"] != "CPU"
                                       or not hardware.has_native_bf16())
  config = albert_tf.AlbertConfig.from_json_file(os.path.join(ORIGINAL_MODEL, "albert_config.json"))
  flops = benchmark.pretraining_flops(config, 2, 16, 3)
  assert (throughput["batch_size"], throughput["seq_length"]) == (2, 16)
  assert throughput["flops_per_training_step"] == flops.train
  assert throughput["achieved_tflops"] == pytest.approx(
      flops.train / throughput["seconds_per_step"] / 1e12, rel=1e-3)
  assert throughput["mfu"] == pytest.approx(throughput["achieved_tflops"] / 0.5, rel=1e-3)


@pytest.mark.slow
def test_base_shape_without_an_accelerator_fails_clearly(tmp_path):
  out = tmp_path / "part.json"
  result = subprocess.run(
      [sys.executable, os.path.join(REPO_ROOT, "tools", "device_check.py"), "--part=throughput",
       f"--output_json={out}"],
      cwd=REPO_ROOT, capture_output=True, text=True, timeout=300, check=False)
  assert result.returncode == 1
  part = json.loads(out.read_text())
  assert not part["passed"] and "no GPU or TPU" in part["error"] and "--tiny" in part["error"]


def test_default_fixture_tests_exist():
  with open(SCRIPT) as f:
    default = re.search(r'DEVICE_CHECK_TESTS:-([^}]*)\}', f.read()).group(1)
  ids = default.replace("\\\n", "").split()
  assert len(ids) == 3
  for test_id in ids:
    path, _, name = test_id.partition("::")
    with open(os.path.join(REPO_ROOT, path)) as f:
      source = f.read()
    assert not name or f"def {name}(" in source, test_id


def test_summary_reports_failures():
  results = {
      "passed": False,
      "mirrored": {"passed": False, "replicas": 2, "physical_device": "NVIDIA H200",
                   "max_abs_diff_losses": 2e-4, "max_abs_diff_weights": 3e-5,
                   "max_abs_diff_slots": 1e-8, "tolerance": 1e-5},
      "throughput": {"passed": False, "error": "timed out after 240 s (raise --part_timeout_s)"},
  }
  text = device_check.summary(results, tiny=False, fixture_tests="passed")
  lines = text.splitlines()
  assert any(l.startswith("fixture tests") and l.endswith("PASS") for l in lines)
  assert any(l.startswith("mirrored fixture updates") and " FAIL " in l and "3.00e-05" in l
             for l in lines)
  assert any(l.startswith("training throughput") and "FAIL  timed out" in l for l in lines)
  assert lines[-1] == "DEVICE CHECK: FAIL"
