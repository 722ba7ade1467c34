"""tools/amx_check.py, issue 32's acceptance in one run: its ratios, bars and verdicts on
fabricated measurements, its reading of tools/benchmark.py's and tools/hf_torch_bench.py's lines,
the "no AMX" report where the CPU has none, and, on an AMX CPU only, the check for real.

The HF side needs an interpreter with torch and transformers (not the project's dependencies):
set AMX_CHECK_HF_PYTHON to one (python3 -m venv /tmp/hfvenv && /tmp/hfvenv/bin/pip install torch
transformers numpy) for the tests that run it; without it they skip.
"""

import importlib.util
import json
import os
import subprocess
import sys

import pytest

from albert_tf import hardware
from albert_tf.config import AlbertConfig
from helpers import REPO_ROOT

sys.path.insert(0, os.path.join(REPO_ROOT, "tools"))
import amx_check  # noqa: E402  pylint: disable=wrong-import-position
import benchmark  # noqa: E402  pylint: disable=wrong-import-position
import hf_torch_bench  # noqa: E402  pylint: disable=wrong-import-position

TOOL = os.path.join(REPO_ROOT, "tools", "amx_check.py")
HF_TOOL = os.path.join(REPO_ROOT, "tools", "hf_torch_bench.py")
TINY_CONFIG = os.path.join(REPO_ROOT, "albert_tf", "configs", "tiny_quickstart.json")
HF_PYTHON = os.environ.get("AMX_CHECK_HF_PYTHON")
needs_hf_python = pytest.mark.skipif(
    not HF_PYTHON, reason="set AMX_CHECK_HF_PYTHON to an interpreter with torch and transformers")


def figure(value, unit="s", **details):
  return {"value": value, "unit": unit, **({"details": details} if details else {})}


def passing_measurements():
  """Issue 32's "today" figures where they would pass: HF bf16 forward 0.213 s and train
  1.14 s; the float32 SavedModel at 124.5 ms (batch 1) and 624 ms (batch 8)."""
  return {
      "forward": figure(0.18, jit_compile=False), "hf_forward": figure(0.213),
      "train": figure(1.0), "hf_train": figure(1.14),
      "saved_model_float32_1": figure(124.5, "ms"), "saved_model_bfloat16_1": figure(60.0, "ms"),
      "saved_model_float32_8": figure(624.0, "ms"), "saved_model_bfloat16_8": figure(300.0, "ms"),
      "best_int8_1": figure(20.0, "ms", int8_runtime="onnx_int8"),
  }


def by_name(lines):
  return {line["comparison"]: line for line in lines if "comparison" in line}


def test_time_ratio_is_ours_over_theirs_and_bar_is_at_most_0_9():
  m = passing_measurements()
  line = by_name([amx_check.comparison_line(c, m) for c in amx_check.COMPARISONS])[
      "bf16_forward_vs_hf_torch"]
  assert (line["ours"], line["theirs"], line["unit"]) == (0.18, 0.213, "s")
  assert line["ratio"] == pytest.approx(0.18 / 0.213, abs=1e-4) == pytest.approx(0.8451, abs=1e-4)
  assert line["bar"] == "<= 0.9" and line["passed"] is True
  assert line["details"] == {"jit_compile": False}
  # Today's 1.6x (0.345 s against 0.213 s) fails; exactly 0.9x passes.
  m["forward"] = figure(0.345)
  comparison = amx_check.COMPARISONS[0]
  failed = amx_check.comparison_line(comparison, m)
  assert failed["ratio"] == pytest.approx(1.6197, abs=1e-4) and failed["passed"] is False
  m["forward"], m["hf_forward"] = figure(0.9), figure(1.0)
  assert amx_check.comparison_line(comparison, m)["passed"] is True


def test_speedup_is_theirs_over_ours_and_bars_are_2_and_5():
  m = passing_measurements()
  lines = by_name([amx_check.comparison_line(c, m) for c in amx_check.COMPARISONS])
  batch_1 = lines["bf16_saved_model_batch_1"]
  assert (batch_1["ours"], batch_1["theirs"], batch_1["unit"]) == (60.0, 124.5, "ms")
  assert batch_1["ratio"] == pytest.approx(2.075) and batch_1["bar"] == ">= 2"
  assert batch_1["passed"] is True
  assert lines["bf16_saved_model_batch_8"]["ratio"] == pytest.approx(2.08)
  int8 = lines["best_int8_batch_1"]
  assert int8["ratio"] == pytest.approx(6.225) and int8["bar"] == ">= 5" and int8["passed"]
  assert int8["details"] == {"int8_runtime": "onnx_int8"}
  # Today's figures: bf16 1.15x at 128 tokens, int8 2.8x (45 ms TFLite): both fail.
  m["saved_model_bfloat16_1"] = figure(124.5 / 1.15, "ms")
  m["best_int8_1"] = figure(45.0, "ms")
  lines = by_name([amx_check.comparison_line(c, m) for c in amx_check.COMPARISONS])
  assert lines["bf16_saved_model_batch_1"]["ratio"] == pytest.approx(1.15, abs=1e-4)
  assert lines["bf16_saved_model_batch_1"]["passed"] is False
  assert lines["best_int8_batch_1"]["ratio"] == pytest.approx(2.7667, abs=1e-4)
  assert lines["best_int8_batch_1"]["passed"] is False
  assert lines["bf16_saved_model_batch_8"]["passed"] is True


def test_a_failed_measurement_fails_its_bars_and_the_exit_status():
  m = passing_measurements()
  m["hf_forward"] = m["hf_train"] = {"error": "tools/hf_torch_bench.py failed with exit status 1"}
  lines = [amx_check.comparison_line(c, m) for c in amx_check.COMPARISONS]
  named = by_name(lines)
  for name in ("bf16_forward_vs_hf_torch", "bf16_train_vs_hf_torch"):
    assert named[name]["passed"] is False and named[name]["ratio"] is None
    assert named[name]["error"].startswith("hf_") and "exit status 1" in named[name]["error"]
  assert all(named[n]["passed"] for n in named if not n.endswith("hf_torch"))
  assert amx_check.exit_status(lines) == 1
  summary = amx_check.summary_line(lines, amx=True, measured=True)
  assert summary["passed"] is False and summary["exit_status"] == 1
  assert summary["failed"] == ["bf16_forward_vs_hf_torch", "bf16_train_vs_hf_torch"]
  # Not measured at all where it should have been: a failure too, not a pass.
  line = amx_check.comparison_line(amx_check.COMPARISONS[0], {})
  assert line["passed"] is False and line["error"] == "not measured"


def test_skipped_bars_are_null_whatever_the_figures_and_exit_0():
  reason = "no AMX on Test CPU: ..."
  m = passing_measurements()
  m["forward"] = figure(10.0)  # would fail
  lines = [amx_check.comparison_line(c, m, skipped=reason) for c in amx_check.COMPARISONS]
  assert all(line["passed"] is None and line["skipped"] == reason for line in lines)
  assert by_name(lines)["bf16_forward_vs_hf_torch"]["ratio"] == pytest.approx(46.9484, abs=1e-4)
  assert amx_check.exit_status(lines) == 0
  summary = amx_check.summary_line(lines, amx=False, measured=True)
  assert summary["passed"] is None and summary["failed"] == [] and summary["exit_status"] == 0
  assert len(summary["skipped"]) == len(amx_check.COMPARISONS) == 5
  assert summary["cpu"] == hardware.describe()


@pytest.mark.parametrize("slow_int8, status", [(20.0, 0), (30.0, 1)])
def test_run_check_on_an_amx_cpu_measures_and_judges(monkeypatch, slow_int8, status):
  m = passing_measurements()
  m["best_int8_1"] = figure(slow_int8, "ms")  # 124.5 / 30 = 4.15x < 5x
  calls = []
  monkeypatch.setattr(hardware, "has_amx", lambda *a: True)
  monkeypatch.setattr(amx_check, "measure", lambda *args: calls.append(args) or m)
  lines = amx_check.run_check("base", "/hf/python", 3, 4, skip_without_amx=True)
  assert calls == [("base", "/hf/python", 3, 4)]
  assert [line["comparison"] for line in lines[:-1]] == [c.name for c in amx_check.COMPARISONS]
  assert not any("skipped" in line for line in lines[:-1])
  summary = lines[-1]
  assert summary["amx"] is True and summary["measured"] is True
  assert summary["exit_status"] == status and summary["passed"] is (status == 0)
  assert summary["failed"] == ([] if status == 0 else ["best_int8_batch_1"])


def test_without_amx_the_report_says_no_amx_and_measures_nothing(monkeypatch, capsys):
  monkeypatch.setattr(hardware, "has_amx", lambda *a: False)

  def measure(*args):
    raise AssertionError("measured on a CPU without AMX under --skip_without_amx")

  monkeypatch.setattr(amx_check, "measure", measure)
  lines = amx_check.run_check("base", sys.executable, 5, 2, skip_without_amx=True)
  expected = f"no AMX on {hardware.cpu_name()}: "
  for line in lines[:-1]:
    assert line["skipped"].startswith(expected) and line["passed"] is None
    assert "--noskip_without_amx" in line["skipped"] and line["ours"] is None
  assert lines[-1]["amx"] is False and lines[-1]["measured"] is False
  assert lines[-1]["exit_status"] == 0
  assert expected in capsys.readouterr().err


def test_without_amx_noskip_measures_but_judges_nothing(monkeypatch):
  monkeypatch.setattr(hardware, "has_amx", lambda *a: False)
  m = passing_measurements()
  m["train"] = figure(5.0)
  monkeypatch.setattr(amx_check, "measure", lambda *args: m)
  lines = amx_check.run_check("base", sys.executable, 5, 2, skip_without_amx=False)
  named = by_name(lines)
  assert named["bf16_train_vs_hf_torch"]["ratio"] == pytest.approx(4.386, abs=1e-3)
  assert all(line["passed"] is None and "for information" in line["skipped"]
             for line in lines[:-1])
  assert lines[-1]["measured"] is True and lines[-1]["exit_status"] == 0


@pytest.mark.skipif(hardware.has_amx(), reason="this CPU has AMX: the tool would measure")
def test_the_tool_reports_no_amx_and_writes_the_json_list(tmp_path):
  out = tmp_path / "amx.json"
  result = subprocess.run([sys.executable, TOOL, f"--output_json={out}"], cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=120, check=False)
  assert result.returncode == 0, result.stderr[-2000:]
  printed = [json.loads(line) for line in result.stdout.splitlines()]
  assert json.loads(out.read_text()) == printed
  assert len(printed) == 6 and printed[-1]["summary"] == "amx_check"
  assert printed[-1]["cpu"] == hardware.describe() and printed[-1]["amx"] is False
  assert all(line["skipped"].startswith("no AMX on ") for line in printed[:-1])
  assert "no AMX on " in result.stderr
  assert not [p for p in os.listdir(tmp_path) if p != "amx.json"]  # no temporary left


def test_the_tool_names_a_config_too_short_to_serve_128_tokens():
  config = os.path.join(REPO_ROOT, "tests", "testdata", "original_model", "albert_config.json")
  result = subprocess.run([sys.executable, TOOL, f"--config={config}"], cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=120, check=False)
  assert result.returncode == 2
  assert result.stderr.strip().splitlines()[-1] == (
      f"error: --config={config}: max_position_embeddings is 64, under the 128 tokens the "
      f"serving bars are at; use a config with more positions")


def test_int8_runtimes_are_read_from_the_benchmarks_table_at_run_time(monkeypatch):
  assert amx_check.int8_runtimes() == [
      r for r in benchmark.PORTABLE_RUNTIMES if "int8" in r]
  assert {"onnx_int8", "tflite_int8"} <= set(amx_check.int8_runtimes())
  table = dict(benchmark.PORTABLE_RUNTIMES, onnx_qdq_int8=("q.onnx", "onnx", "static", True))
  monkeypatch.setattr(benchmark, "PORTABLE_RUNTIMES", table)
  assert "onnx_qdq_int8" in amx_check.int8_runtimes()
  assert "onnx" not in amx_check.int8_runtimes()


def serving_line(runtime, batch, p50, signature="tokens", tokens=128):
  return {"mode": "serving", "runtime": runtime, "signature": signature, "tokens": tokens,
          "batch_size": batch, "p50_ms": p50, "p99_ms": p50 * 1.2}


def test_measure_int8_keeps_the_fastest_and_each_ones_result(monkeypatch):
  def lines(argv, what):
    runtime = next(a.split("=", 1)[1] for a in argv if a.startswith("--serving_runtimes="))
    assert "--serving_threads=6" in argv and "--serving_batch_sizes=1" in argv
    if runtime == "tflite_int8":
      raise RuntimeError(f"{what} failed with exit status 1: no LiteRT")
    return [serving_line(runtime, 1, 9.0, tokens=8), serving_line(runtime, 1, {"a": 30.0,
            "b": 18.5}[runtime])]

  monkeypatch.setattr(amx_check, "_json_lines", lines)
  best = amx_check.measure_int8("base", ["a", "tflite_int8", "b"], 6)["best_int8_1"]
  assert best["value"] == 18.5 and best["unit"] == "ms"
  assert best["details"]["int8_runtime"] == "b"
  each = best["details"]["int8_p50_ms"]
  assert each["a"] == 30.0 and each["b"] == 18.5 and "no LiteRT" in each["tflite_int8"]["error"]
  with pytest.raises(RuntimeError, match="no int8 export could be timed: tflite_int8: "):
    amx_check.measure_int8("base", ["tflite_int8"], 6)
  with pytest.raises(RuntimeError, match="PORTABLE_RUNTIMES has no int8 runtime"):
    amx_check.measure_int8("base", [], 6)


def test_measurements_read_the_lines_the_bars_name(monkeypatch):
  outputs = {
      "tools/hf_torch_bench.py": [
          {"mode": "forward", "mixed_precision": "mixed_bfloat16", "seconds_per_step": 0.213,
           "torch": "2.13.0+cpu", "transformers": "5.24.0", "threads": 8, "attention": "sdpa"},
          {"mode": "train", "mixed_precision": "mixed_bfloat16", "seconds_per_step": 1.14,
           "torch": "2.13.0+cpu", "transformers": "5.24.0", "threads": 8, "attention": "sdpa"}],
      "forward and train (tools/benchmark.py)": [
          {"mode": "forward", "seconds_per_step": 0.345, "jit_compile": False, "threads": 8},
          {"mode": "train", "seconds_per_step": 1.07, "jit_compile": False, "threads": 8}],
      "float32 SavedModel": [serving_line("saved_model", 1, 50.0, signature="text"),
                             serving_line("saved_model", 1, 124.5),
                             serving_line("saved_model", 8, 50.0, signature="text"),
                             serving_line("saved_model", 8, 624.0)],
  }

  def lines(argv, what):
    return next(v for k, v in outputs.items() if k in what)

  monkeypatch.setattr(amx_check, "_json_lines", lines)
  hf = amx_check.measure_hf("base", "/hf/python", 5)
  assert hf["hf_forward"]["value"] == 0.213 and hf["hf_train"]["value"] == 1.14
  assert hf["hf_forward"]["details"]["hf_torch"] == "2.13.0+cpu"
  ours = amx_check.measure_ours("base", 5)
  assert ours["forward"] == figure(0.345, jit_compile=False, threads=8)
  assert ours["train"]["value"] == 1.07
  served = amx_check.measure_saved_model("base", "float32")
  assert served == {"saved_model_float32_1": figure(124.5, "ms"),
                    "saved_model_float32_8": figure(624.0, "ms")}


def test_measure_records_a_failure_and_goes_on(monkeypatch):
  def hf(*args):
    raise RuntimeError("HF torch bf16 forward and train failed with exit status 1: boom")

  monkeypatch.setattr(amx_check, "measure_hf", hf)
  monkeypatch.setattr(amx_check, "measure_ours", lambda *a: {"forward": figure(1.0),
                                                             "train": figure(2.0)})
  monkeypatch.setattr(amx_check, "measure_saved_model", lambda c, p: {
      f"saved_model_{p}_{b}": figure(10.0, "ms") for b in (1, 8)})
  monkeypatch.setattr(amx_check, "measure_int8", lambda *a: {"best_int8_1": figure(2.0, "ms")})
  m = amx_check.measure("base", "/hf/python", 5, 2)
  assert m["hf_forward"] == m["hf_train"] == {
      "error": "HF torch bf16 forward and train failed with exit status 1: boom"}
  assert m["forward"]["value"] == 1.0 and m["saved_model_bfloat16_8"]["value"] == 10.0
  assert m["best_int8_1"]["value"] == 2.0


# -- tools/hf_torch_bench.py ----------------------------------------------------------------------
@pytest.mark.parametrize("preset", ["base", "large", "xxlarge"])
def test_hf_config_is_the_one_our_config_exports(preset):
  ours = AlbertConfig.from_preset(preset).to_hf_config()
  values = hf_torch_bench.hf_config_values(hf_torch_bench.config_path(preset))
  for key, value in values.items():
    if key != "classifier_dropout_prob":  # ours writes HF's default head dropout, 0.1
      assert ours[key] == value, key
  assert values["hidden_act"] == "gelu_new" and values["layer_norm_eps"] == 1e-12
  assert set(hf_torch_bench.HF_FIELDS) <= set(values)


def test_hf_config_of_other_sharings(tmp_path):
  base = AlbertConfig.from_preset("base")
  path = tmp_path / "albert_config.json"
  path.write_text(base.replace(parameter_sharing="not-shared").to_json_string())
  values = hf_torch_bench.hf_config_values(str(path))
  assert values["num_hidden_groups"] == 12 == base.replace(
      parameter_sharing="not-shared").to_hf_config()["num_hidden_groups"]
  path.write_text(base.replace(parameter_sharing="shared-attention").to_json_string())
  with pytest.raises(hf_torch_bench.UsageError, match="parameter_sharing 'shared-attention'"):
    hf_torch_bench.hf_config_values(str(path))
  with pytest.raises(hf_torch_bench.UsageError, match="--config=huge: no such"):
    hf_torch_bench.config_path("huge")


def test_hf_command_and_lines():
  argv = hf_torch_bench.command("/hf/python", config="base", mode=["forward", "train"],
                                steps=3, threads=None)
  assert argv == ["/hf/python", HF_TOOL, "--config=base", "--mode=forward,train", "--steps=3"]
  args = hf_torch_bench.parse_args(argv[2:])
  assert (args.config, args.mode, args.steps) == ("base", ["forward", "train"], 3)
  assert args.mixed_precision == ["float32", "mixed_bfloat16"] and args.batch_size == 8
  assert hf_torch_bench.parse_lines('notice\n{"mode": "forward"}\n') == [{"mode": "forward"}]
  assert hf_torch_bench._without_hf_python(  # pylint: disable=protected-access
      ["--hf_python", "/x", "--steps=2", "--hf_python=/y"]) == ["--steps=2"]


@pytest.mark.skipif(importlib.util.find_spec("torch") is not None,
                    reason="torch is installed in this interpreter")
def test_hf_bench_without_torch_names_the_fix():
  result = subprocess.run([sys.executable, HF_TOOL, "--steps=1"], cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=60, check=False)
  assert result.returncode == 2 and result.stdout == ""
  (line,) = result.stderr.strip().splitlines()
  assert line.startswith("error: ") and "has no torch" in line and "--hf_python=" in line
  with pytest.raises(hf_torch_bench.UsageError, match="--hf_python=.*torch and transformers"):
    hf_torch_bench.check_interpreter(sys.executable)


@pytest.mark.slow
@needs_hf_python
def test_hf_bench_times_each_mode_and_precision_without_tensorflow():
  result = subprocess.run(
      [sys.executable, HF_TOOL, f"--hf_python={HF_PYTHON}", f"--config={TINY_CONFIG}",
       "--batch_size=2", "--seq_length=16", "--num_predictions=3", "--warmup_steps=1",
       "--steps=2", "--threads=1"],
      cwd=REPO_ROOT, capture_output=True, text=True, timeout=600, check=False)
  assert result.returncode == 0, result.stderr[-2000:]
  lines = hf_torch_bench.parse_lines(result.stdout)
  assert [(l["mode"], l["mixed_precision"]) for l in lines] == [
      ("forward", "float32"), ("train", "float32"), ("forward", "mixed_bfloat16"),
      ("train", "mixed_bfloat16")]
  # AlbertForPreTraining's parameters: the tiny config's, pretraining heads included.
  config = AlbertConfig.from_json_file(TINY_CONFIG)
  e, h, i, v = config.embedding_size, config.hidden_size, config.intermediate_size, 2000
  embeddings = (v + config.max_position_embeddings + 2) * e + 2 * e
  layer = 4 * (h * h + h) + 2 * h + (h * i + i) + (i * h + h) + 2 * h
  heads = (e * h + h) + (h * h + h) + (h * e + e) + 2 * e + v + (h * 2 + 2)
  for line in lines:
    assert line["runtime"] == "hf_torch" and line["tensorflow_loaded"] is False
    assert line["threads"] == 1 and line["batch_size"] == 2 and line["seconds_per_step"] > 0
    assert line["examples_per_second"] == pytest.approx(2 / line["seconds_per_step"], rel=1e-2)
    assert line["parameters"] == embeddings + layer + heads


@pytest.mark.slow
def test_our_measurements_read_the_real_benchmark_lines():
  ours = amx_check.measure_ours(TINY_CONFIG, 1)
  assert ours["forward"]["value"] > 0 and ours["train"]["value"] > 0
  assert isinstance(ours["forward"]["details"]["jit_compile"], bool)
  served = amx_check.measure_saved_model(TINY_CONFIG, "float32")
  assert set(served) == {"saved_model_float32_1", "saved_model_float32_8"}
  assert 0 < served["saved_model_float32_1"]["value"] < served["saved_model_float32_8"]["value"]


@pytest.mark.slow
@pytest.mark.skipif(not hardware.has_amx(),
                    reason=f"issue 32's acceptance needs AMX: {hardware.describe()}")
@needs_hf_python
def test_issue_32_acceptance_on_this_amx_cpu(tmp_path):
  out = tmp_path / "amx_check.json"
  result = subprocess.run(
      [sys.executable, TOOL, f"--hf_python={HF_PYTHON}", f"--output_json={out}"],
      cwd=REPO_ROOT, capture_output=True, text=True, timeout=7200, check=False)
  lines = json.loads(out.read_text())
  failed = {l["comparison"]: (l["ratio"], l["bar"], l.get("error")) for l in lines[:-1]
            if not l["passed"]}
  assert not failed and result.returncode == 0, failed
