"""tools/benchmark.py runs and reports what it promises (speed targets live in the tool)."""

import json
import os
import subprocess
import sys

import pytest

from helpers import ORIGINAL_MODEL, REPO_ROOT

# Both tools build, train and time models (15 to 25 s each on 2 cores).
pytestmark = pytest.mark.slow


def test_benchmark_reports_each_mode():
  cmd = [sys.executable, os.path.join(REPO_ROOT, "tools", "benchmark.py"),
         f"--config={os.path.join(ORIGINAL_MODEL, 'albert_config.json')}", "--batch_size=2",
         "--seq_length=16", "--num_predictions=3", "--mode=all", "--steps=2", "--warmup_steps=1",
         "--iterations_per_loop=3", "--serving_requests=6", "--serving_batch_size=4"]
  result = subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=True)
  lines = [json.loads(l) for l in result.stdout.splitlines() if l.startswith("{")]
  assert [l["mode"] for l in lines] == ["forward", "train"] + ["serving"] * 4
  # The training step is run_pretraining's Runner, 3 updates per call.
  assert (lines[1]["optimizer"], lines[1]["iterations_per_loop"]) == ("lamb", 3)
  assert lines[1]["mixed_precision"] == "float32"
  serving = lines[2:]
  assert [(l["signature"], l["batch_size"]) for l in serving] == [
      ("text", 1), ("tokens", 1), ("text", 4), ("tokens", 4)]
  for line in serving:
    assert 0 < line["p50_ms"] <= line["p99_ms"] and line["examples_per_second"] > 0
  for line in lines[:2]:
    assert line["seconds_per_step"] > 0 and line["peak_rss_mb"] > 0
    assert abs(line["examples_per_second"] - 2 / line["seconds_per_step"]) < 0.05 * line[
        "examples_per_second"] + 0.01


def test_dynamic_length_benchmark_reports_equal_logits():
  cmd = [sys.executable, os.path.join(REPO_ROOT, "tools", "benchmark_dynamic_length.py"),
         f"--config={os.path.join(ORIGINAL_MODEL, 'albert_config.json')}",
         "--max_seq_length=64", "--batch_size=8", "--train_steps=1"]
  result = subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=True)
  lines = [json.loads(l) for l in result.stdout.splitlines() if l.startswith("{")]
  assert [l["mode"] for l in lines] == ["eval", "train"]
  assert lines[0]["examples"] == 288 and lines[0]["max_logit_diff"] < 1e-5
  for line in lines:  # (timings of a tiny model are too short to compare here)
    assert line["fixed_seconds"] > 0 and line["dynamic_seconds"] > 0 and line["speedup"] > 0
