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
import warm_binaries
from albert_tf.core import hardware
from helpers import ORIGINAL_MODEL, REPO_ROOT

sys.path.insert(0, os.path.join(REPO_ROOT, "tools"))
import benchmark
import device_check

SCRIPT = os.path.join(REPO_ROOT, "tools", "device_check.sh")


@pytest.mark.slow
def test_tiny_device_check_passes_with_its_figures(tmp_path):
  out = tmp_path / "device_check.json"
  # Part 1 runs one cheap fixture test here: the full list is already in the suite.
  env = dict(os.environ, DEVICE_CHECK_TESTS="tests/optimization/test_optimization.py::"
             "test_schedule_matches_fixture_and_formula")
  # The script's python3 (its $PYTHON) is the suite's shim: the check's parts, each a process of
  # its own, start warm; its pytest and create_pretraining_data runs start as given.
  shim = warm_binaries.python3_shim(str(tmp_path / "bin"), sys.executable, env,
                                    [["tools/device_check.py", "--part=sweep"]])
  env["PATH"] = shim + os.pathsep + env["PATH"]
  result = subprocess.run(
      ["bash", SCRIPT, "--tiny", f"--output_json={out}", "--peak_tflops=0.5", "--steps=2",
       "--warmup_steps=1", "--iterations_per_loop=2", "--sweep_dupe_factor=1"],
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

  # The sweep: each tiny shape unpacked and packed, on records it made of short documents.
  sweep = figures["sweep"]
  assert sweep["passed"] and sweep["records_seconds"] > 0 and sweep["max_sequences_per_row"] == 4
  assert [(p["seq_length"], p["batch_size"], p["packed"], p["status"]) for p in sweep["points"]] \
      == [(t, b, k, "ok") for t, batches in device_check.TINY_SWEEP_SHAPES for b in batches
          for k in (False, True)]
  for point in sweep["points"]:
    assert point["data"] == "records" and point["mixed_precision"] == "mixed_bfloat16"
    assert point["max_sequences_per_row"] == (4 if point["packed"] else None)
    assert point["rows"] == point["batch_size"] * 2 * 4  # 2 timed calls of 4 updates
    assert 0 < point["real_tokens"] <= point["rows"] * point["seq_length"]
    assert point["real_tokens_per_second"] == pytest.approx(
        point["real_tokens"] / point["timed_seconds"], rel=2e-3)
    assert point["mfu"] == pytest.approx(point["achieved_tflops"] / 0.5, rel=1e-3)
  best = max(sweep["points"], key=lambda p: p["mfu"])
  assert sweep["best"]["mfu"] == best["mfu"] and sweep["meets_mfu_goal"] is (best["mfu"] >= 0.45)
  assert "training sweep" in result.stdout and "best MFU" in result.stdout


@pytest.mark.slow
def test_base_shape_without_an_accelerator_fails_clearly(tmp_path):
  out = tmp_path / "part.json"
  # From the suite's warm start (tests/warm_binaries.py): the part's answer is the subject.
  result = warm_binaries.run_script(
      os.path.join(REPO_ROOT, "tools", "device_check.py"),
      ["--part=throughput", f"--output_json={out}"], cwd=REPO_ROOT, timeout=300)
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


def _line(mfu):
  """A train line's fields the sweep reads."""
  return {"mfu": mfu, "sequences_per_second": 2.0, "real_tokens_per_second": 100.0,
          "padding_fraction": 0.5, "seconds_per_step": 1.0}


class _Clock:
  """A clock that each measured point moves on by its `seconds`."""

  def __init__(self):
    self.now = 0.0

  def __call__(self):
    return self.now


def test_sweep_stops_a_length_when_memory_runs_out():
  import tensorflow as tf
  clock, calls = _Clock(), []

  def measure(seq_length, batch_size, packed):
    calls.append((seq_length, batch_size, packed))
    clock.now += 1.0
    if (seq_length, batch_size, packed) == (512, 128, False):
      raise tf.errors.ResourceExhaustedError(None, None, "OOM when allocating tensor")
    return _line(batch_size / 1000 + (0.01 if packed else 0.0))

  shapes = ((512, (32, 64, 128, 256)), (128, (128, 256)))
  points = device_check.run_sweep(shapes, measure, budget_s=100, clock=clock, log=lambda _: None)
  # The first out-of-memory point ends its length; the next length is swept in full.
  assert calls == [(512, 32, False), (512, 32, True), (512, 64, False), (512, 64, True),
                   (512, 128, False), (128, 128, False), (128, 128, True), (128, 256, False),
                   (128, 256, True)]
  status = {(p["seq_length"], p["batch_size"], p["packed"]): p["status"] for p in points}
  assert status[(512, 128, False)] == "out_of_memory"
  assert [status[(512, b, k)] for b, k in ((128, True), (256, False), (256, True))] == [
      "skipped"] * 3
  skipped = [p for p in points if p["status"] == "skipped"]
  assert all(p["reason"] == "out of memory at batch 128 (unpacked)" for p in skipped)
  summary = device_check.sweep_summary(points)
  assert summary["passed"] and summary["best"]["mfu"] == 0.266
  assert (summary["best"]["seq_length"], summary["best"]["batch_size"]) == (128, 256)
  assert summary["meets_mfu_goal"] is False and summary["mfu_goal"] == 0.45


def test_sweep_keeps_to_its_budget_and_fails_without_a_point():
  clock = _Clock()

  def measure(seq_length, batch_size, packed):
    clock.now += 30.0
    if seq_length == 128 and not packed:
      raise ValueError("no such thing")
    return _line(0.5)

  shapes = ((512, (32, 64, 128)), (128, (128, 256)))
  points = device_check.run_sweep(shapes, measure, budget_s=200, clock=clock, log=lambda _: None)
  # Seq 512 has until 100 s: after 3 points (90 s) a fourth would pass it.
  assert [p["status"] for p in points[:6]] == ["ok", "ok", "ok", "skipped", "skipped", "skipped"]
  assert points[3]["reason"] == "the sweep's time budget (--sweep_budget_s)"
  # A failure that is not out of memory ends its variant at that length, and says what it was.
  assert [(p["batch_size"], p["packed"], p["status"]) for p in points[6:]] == [
      (128, False, "failed"), (128, True, "ok"), (256, False, "skipped"), (256, True, "ok")]
  assert points[6]["reason"] == "ValueError: no such thing"
  assert points[8]["reason"] == "failed at batch 128 (unpacked)"
  summary = device_check.sweep_summary(points)
  assert not summary["passed"] and summary["meets_mfu_goal"] is True


def test_summary_lists_the_sweep_points():
  point = {"seq_length": 512, "batch_size": 64, "packed": True, "status": "ok", "mfu": 0.47,
           "jit_compile": True,
           "sequences_per_second": 812.5, "real_tokens_per_second": 301234.0,
           "padding_fraction": 0.18, "seconds_per_step": 0.2, "gpu_peak_memory_mb": 41000.0}
  oom = {"seq_length": 512, "batch_size": 128, "packed": False, "status": "out_of_memory",
         "reason": "ResourceExhaustedError: OOM"}
  sweep = dict(device_check.sweep_summary([point, oom]), points=[point, oom], config="base",
               accelerator="NVIDIA H100 80GB HBM3", max_sequences_per_row=4,
               records_source="short documents", records_seconds=12.0)
  lines = device_check.sweep_lines(sweep, lambda ok: "PASS" if ok else "FAIL")
  # No unpacked point was measured at seq 512: the sweep fails, its best point still shown.
  assert lines[0].startswith("training sweep") and " FAIL " in lines[0]
  assert "base, mixed_bfloat16, XLA on NVIDIA H100 80GB HBM3, packed <= 4 a row" in lines[0]
  assert "best MFU 0.470 at seq 512 batch 64 packed: goal >= 0.45 met" in lines[0]
  assert lines[2] == ("  seq  512 batch   64 packed    MFU 0.470, 812.5 sequences/s, 301234 real "
                      "tokens/s (padding 0.18), 0.2 s/step, GPU memory peak 41000.0 MB")
  assert lines[3] == "  seq  512 batch  128 unpacked  out_of_memory: ResourceExhaustedError: OOM"
