"""tools/cpu_check.py, issue 38's check on any x86 CPU: which bars apply to which CPU class, the
ratios and verdicts on canned measurements, peers that are missing (skipped, not failed), its
reading of the programs' lines, the int8 fidelity lines, tools/kerashub_bench.py's model, and
(slow) one run end to end at a tiny shape with keras-hub as the only peer. Speeds are never
asserted: the targets live in the check."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from albert_tf.core import hardware
from albert_tf.core.config import AlbertConfig
from helpers import REPO_ROOT

sys.path.insert(0, os.path.join(REPO_ROOT, "tools"))
import benchmark
import cpu_check
import hf_torch_bench
import kerashub_bench

TOOL = os.path.join(REPO_ROOT, "tools", "cpu_check.py")
TINY_CONFIG = os.path.join(REPO_ROOT, "albert_tf", "configs", "tiny_quickstart.json")
BASE = cpu_check.BASE_SHAPE

# albert_tf.core.hardware.matrix_units() of the three CPU classes issue 38 names.
NONE = dict.fromkeys(hardware.MATRIX_UNITS, False)
AVX2_ONLY = dict(NONE, avx2=True)  # AMD Zen 3
ZEN4 = dict(NONE, avx2=True, avx512f=True, avx512_bf16=True, avx512_vnni=True)
AMX = dict(ZEN4, amx_bf16=True, amx_int8=True, avx_vnni=True)  # Intel Sapphire Rapids

STEP_BARS = [f"{p}_{m}_vs_{peer}" for p in ("float32", "bf16") for m in ("forward", "train")
             for peer in ("hf_torch", "keras_hub")]


def figure(value, unit="s", **details):
  return {"value": value, "unit": unit, **({"details": details} if details else {})}


def table(units):
  """{bar name: its bar text, or "skipped: <why>"} on a CPU of `units` at the base shape."""
  return {c.name: (f"{c.bar.op} {c.bar.threshold:g}" if c.bar else f"skipped: {c.skipped}")
          for c in cpu_check.comparisons(BASE, units, "Test CPU")}


def test_every_cpu_class_gets_the_same_bars_in_the_same_order():
  names = list(table(AMX))
  assert names == STEP_BARS + [
      "bf16_saved_model_128x1", "bf16_saved_model_128x8", "best_int8_128x1",
      "static_int8_vs_dynamic_128x1", "short_request_float32_vs_matmuls",
      "short_request_bf16_vs_float32"]
  assert list(table(AVX2_ONLY)) == list(table(ZEN4)) == names


def test_avx2_only_cpu_float32_bars_and_int8_at_3x():
  bars = table(AVX2_ONLY)
  for name in STEP_BARS[:4]:
    assert bars[name] == "<= 0.9"
  no_bf16 = "skipped: no bf16 units on Test CPU: the bf16 bars are for CPUs with AMX-BF16 or "
  for name in STEP_BARS[4:] + ["bf16_saved_model_128x1", "bf16_saved_model_128x8",
                               "short_request_bf16_vs_float32"]:
    assert bars[name].startswith(no_bf16), name
  assert bars["best_int8_128x1"] == ">= 3"
  assert bars["static_int8_vs_dynamic_128x1"].startswith("skipped: no VNNI or AMX-INT8 on Test")
  assert bars["short_request_float32_vs_matmuls"] == "<= 2"
  assert cpu_check.bar_units(AVX2_ONLY) == {"bf16_saved_model": None, "best_int8": "AVX2"}


def test_avx512_bf16_and_vnni_cpu_gets_bf16_at_1_7x_and_int8_at_5x():
  bars = table(ZEN4)
  assert all(bars[name] == "<= 0.9" for name in STEP_BARS)
  assert bars["bf16_saved_model_128x1"] == bars["bf16_saved_model_128x8"] == ">= 1.7"
  assert bars["best_int8_128x1"] == ">= 5"
  assert bars["static_int8_vs_dynamic_128x1"] == "<= 1"
  assert bars["short_request_bf16_vs_float32"] == "<= 1"
  assert cpu_check.bar_units(ZEN4) == {"bf16_saved_model": "AVX512-BF16",
                                       "best_int8": "AVX512-VNNI"}
  # AVX-VNNI alone (Alder Lake's AVX2 int8 dot products) is VNNI too.
  assert table(dict(AVX2_ONLY, avx_vnni=True))["best_int8_128x1"] == ">= 5"


def test_amx_cpu_gets_bf16_at_2_5x_and_int8_at_8x():
  bars = table(AMX)
  assert bars["bf16_saved_model_128x1"] == bars["bf16_saved_model_128x8"] == ">= 2.5"
  assert bars["best_int8_128x1"] == ">= 8"
  assert not any(text.startswith("skipped") for text in bars.values())
  assert cpu_check.bar_units(AMX) == {"bf16_saved_model": "AMX-BF16", "best_int8": "AMX-INT8"}


def test_no_avx2_skips_the_int8_bar_and_shape_names_the_bars():
  assert table(NONE)["best_int8_128x1"].startswith("skipped: no AVX2 on Test CPU")
  tiny = cpu_check.Shape(2, 16, 3, 32, 4, 8)
  names = [c.name for c in cpu_check.comparisons(tiny, AMX, "Test CPU")]
  assert "bf16_saved_model_32x4" in names and "best_int8_32x1" in names
  short = next(c for c in cpu_check.comparisons(tiny, AMX, "x") if c.name.startswith("short"))
  assert (short.ours, short.theirs) == ("saved_model_float32_8x1", "short_request_matmuls")


def zen4_measurements():
  """Issue 38's Zen 4 figures (seconds per step; p50 ms), and int8 and GEMM figures that make
  the short request 4.3x its matmuls."""
  m = {}
  for precision, ours, hf, kh in (("float32", (1.02, 3.22), (1.45, 4.20), (1.16, 3.50)),
                                  ("mixed_bfloat16", (0.81, 1.90), (0.74, 2.65), (0.69, 2.01))):
    for i, mode in enumerate(("forward", "train")):
      m[f"ours_{mode}_{precision}"] = figure(ours[i], jit_compile=False)
      m[f"hf_torch_{mode}_{precision}"] = figure(hf[i], hf_torch_torch="2.9")
      m[f"keras_hub_{mode}_{precision}"] = figure(kh[i])
  m.update({
      "saved_model_float32_128x1": figure(169.6, "ms"),
      "saved_model_bfloat16_128x1": figure(111.8, "ms"),
      "saved_model_float32_128x8": figure(1076.0, "ms"),
      "saved_model_bfloat16_128x8": figure(595.0, "ms"),
      "saved_model_float32_8x1": figure(30.9, "ms"), "saved_model_bfloat16_8x1": figure(33.2, "ms"),
      "best_int8": figure(37.0, "ms", best_int8_runtime="tflite_int8"),
      "best_static_int8": figure(60.5, "ms"), "best_dynamic_int8": figure(46.2, "ms"),
      "short_request_matmuls": figure(7.186, "ms"),
  })
  return m


def judged(m, units=ZEN4, shape=BASE):
  return {c.name: cpu_check.comparison_line(c, m)
          for c in cpu_check.comparisons(shape, units, "Test CPU")}


def test_step_ratios_are_ours_over_each_peer():
  lines = judged(zen4_measurements())
  line = lines["float32_forward_vs_hf_torch"]
  assert (line["ours"], line["theirs"], line["unit"]) == (1.02, 1.45, "s")
  assert line["ratio"] == pytest.approx(0.7034, abs=1e-4) and line["passed"] is True
  assert line["details"] == {"jit_compile": False, "hf_torch_torch": "2.9"}
  assert line["ratio_of"].startswith("ours / theirs")
  # 1.02 / 1.16 = 0.879 passes; the bf16 forward, 0.81 / 0.69 = 1.17x keras-hub's, fails.
  assert lines["float32_forward_vs_keras_hub"]["ratio"] == pytest.approx(0.8793, abs=1e-4)
  assert lines["float32_forward_vs_keras_hub"]["passed"] is True
  assert lines["bf16_forward_vs_keras_hub"]["ratio"] == pytest.approx(1.1739, abs=1e-4)
  assert lines["bf16_forward_vs_keras_hub"]["passed"] is False
  assert lines["bf16_forward_vs_hf_torch"]["passed"] is False  # 0.81 / 0.74
  assert lines["bf16_train_vs_hf_torch"]["ratio"] == pytest.approx(0.717, abs=1e-4)
  assert lines["float32_train_vs_keras_hub"]["ratio"] == pytest.approx(0.92, abs=1e-4)
  assert lines["float32_train_vs_keras_hub"]["passed"] is False
  # Exactly 0.9x passes.
  m = zen4_measurements()
  m["ours_train_float32"], m["keras_hub_train_float32"] = figure(0.9), figure(1.0)
  assert judged(m)["float32_train_vs_keras_hub"]["passed"] is True


def test_serving_ratios_are_speedups_against_float32():
  lines = judged(zen4_measurements())
  batch_1, batch_8 = lines["bf16_saved_model_128x1"], lines["bf16_saved_model_128x8"]
  assert batch_1["ratio"] == pytest.approx(1.517, abs=1e-3) and batch_1["passed"] is False
  assert batch_8["ratio"] == pytest.approx(1.8084, abs=1e-4) and batch_8["passed"] is True
  assert batch_1["ratio_of"].startswith("theirs / ours") and batch_1["unit"] == "ms"
  int8 = lines["best_int8_128x1"]
  assert int8["ratio"] == pytest.approx(4.5838, abs=1e-4) and int8["passed"] is False  # < 5
  assert int8["details"] == {"best_int8_runtime": "tflite_int8"}
  # The same figures on an AVX2-only CPU: 4.58x passes its 3x bar, the bf16 bars are skipped.
  avx2 = judged(zen4_measurements(), AVX2_ONLY)
  assert avx2["best_int8_128x1"]["passed"] is True and avx2["best_int8_128x1"]["bar"] == ">= 3"
  assert avx2["bf16_saved_model_128x8"]["passed"] is None
  assert avx2["bf16_saved_model_128x8"]["ratio"] == pytest.approx(1.8084, abs=1e-4)


def test_static_and_short_request_ratios():
  lines = judged(zen4_measurements())
  static = lines["static_int8_vs_dynamic_128x1"]
  assert static["ratio"] == pytest.approx(60.5 / 46.2, abs=1e-4) and static["passed"] is False
  short = lines["short_request_float32_vs_matmuls"]
  assert short["ratio"] == pytest.approx(4.3, abs=1e-3) and short["passed"] is False
  assert lines["short_request_bf16_vs_float32"]["ratio"] == pytest.approx(1.0744, abs=1e-4)
  assert lines["short_request_bf16_vs_float32"]["passed"] is False
  m = zen4_measurements()
  m["best_static_int8"], m["saved_model_float32_8x1"] = figure(46.2, "ms"), figure(14.0, "ms")
  lines = judged(m)
  assert lines["static_int8_vs_dynamic_128x1"]["passed"] is True  # as fast is enough
  assert lines["short_request_float32_vs_matmuls"]["ratio"] == pytest.approx(1.9482, abs=1e-4)
  assert lines["short_request_float32_vs_matmuls"]["passed"] is True


def test_a_missing_peer_is_skipped_and_a_failed_measurement_fails():
  m = zen4_measurements()
  why = "no --hf_python given: hf_torch's bars need ..."
  for key in [k for k in m if k.startswith("hf_torch_")]:
    m[key] = {"skipped": why}
  m["best_int8"] = {"error": "no int8 export could be timed: onnx_int8: boom"}
  lines = judged(m)
  for name in [n for n in STEP_BARS if n.endswith("hf_torch")]:
    assert lines[name]["skipped"] == why and lines[name]["passed"] is None
    assert lines[name]["ours"] is None and "error" not in lines[name]
  assert lines["best_int8_128x1"]["passed"] is False
  assert lines["best_int8_128x1"]["error"] == "best_int8: no int8 export could be timed: " \
                                              "onnx_int8: boom"
  del m["saved_model_float32_8x1"]
  assert judged(m)["short_request_float32_vs_matmuls"]["error"] == "not measured"
  bars = list(lines.values())
  assert cpu_check.exit_status(bars) == 1
  summary = cpu_check.summary_line(bars, ZEN4, BASE, {"hf_torch": why, "keras_hub": "python3"})
  assert summary["passed"] is False and summary["exit_status"] == 1
  assert summary["skipped"] == [n for n in STEP_BARS if n.endswith("hf_torch")]
  assert "best_int8_128x1" in summary["failed"] and "bf16_forward_vs_keras_hub" in summary["failed"]
  assert summary["cpu"] == hardware.describe() and summary["peers"]["hf_torch"] == why
  assert summary["thresholds_for"] == {"bf16_saved_model": "AVX512-BF16",
                                       "best_int8": "AVX512-VNNI"}


def test_all_passing_exits_0_and_all_skipped_is_no_verdict():
  m = zen4_measurements()
  for key in [k for k in m if k.startswith("ours_")]:
    m[key] = figure(0.5)
  m.update(saved_model_bfloat16_128x1=figure(60.0, "ms"),
           saved_model_bfloat16_128x8=figure(400.0, "ms"), best_int8=figure(20.0, "ms"),
           best_static_int8=figure(40.0, "ms"), saved_model_float32_8x1=figure(14.0, "ms"),
           saved_model_bfloat16_8x1=figure(10.0, "ms"))
  bars = list(judged(m).values())
  assert [b["comparison"] for b in bars if not b["passed"]] == []
  fidelity = [{"fidelity": "onnx_int8", "model": "random", "meets_goal": False}]
  summary = cpu_check.summary_line(bars + fidelity, ZEN4, BASE, {})
  assert summary["passed"] is True and summary["exit_status"] == 0
  assert summary["fidelity_below_goal"] == ["onnx_int8 (random)"]  # reported, not a bar
  skipped = [dict(b, passed=None, skipped="x") for b in bars]
  assert cpu_check.summary_line(skipped, ZEN4, BASE, {})["passed"] is None


def test_peer_unavailable_says_why():
  assert cpu_check.peer_unavailable("hf_torch", None).startswith(
      "no --hf_python given: hf_torch's bars need an interpreter with torch and transformers")
  assert cpu_check.peer_unavailable("keras_hub", "").startswith("no --kerashub_python given")
  missing = "/nonexistent/python3"
  assert cpu_check.peer_unavailable("keras_hub", missing).startswith(
      f"--kerashub_python={missing}: cannot run it")


def test_measure_skips_missing_peers_and_records_failures(monkeypatch):
  calls = []

  def ours(config, shape, precision, steps):
    calls.append(("ours", precision))
    if precision == "mixed_bfloat16":
      raise RuntimeError("our mixed_bfloat16 forward and train failed with exit status 1: boom")
    return {"ours_forward_float32": figure(1.0), "ours_train_float32": figure(3.0),
            "gemm_float32": figure(0.196, "TFLOP/s", gemm_probe="GEMM probe: 2048^3")}

  monkeypatch.setattr(cpu_check, "measure_ours", ours)
  monkeypatch.setattr(cpu_check, "measure_peer", lambda peer, *a: calls.append(peer) or {
      f"{peer}_{m}_{p}": figure(2.0) for m in cpu_check.MODES for p in a[3]})
  monkeypatch.setattr(cpu_check, "peer_unavailable",
                      lambda peer, python: None if python else f"no {peer}")
  monkeypatch.setattr(cpu_check, "measure_saved_model", lambda c, p, s: {
      f"saved_model_{p}_{t}x{b}": figure(10.0, "ms") for t, b in ((128, 1), (128, 8), (8, 1))})
  monkeypatch.setattr(cpu_check, "measure_int8", lambda *a: (
      {"best_int8": figure(2.0, "ms")}, [{"fidelity": "onnx_int8"}]))
  plan = cpu_check.Plan("base", BASE, 5, 2, {"hf_torch": None, "keras_hub": "/kh"}, True, None)
  m, fidelity = cpu_check.measure(plan)
  assert calls == ["keras_hub", ("ours", "float32"), ("ours", "mixed_bfloat16")]
  assert m["hf_torch_train_mixed_bfloat16"] == {"skipped": "no hf_torch"}
  assert m["keras_hub_forward_mixed_bfloat16"]["value"] == 2.0
  assert m["ours_train_mixed_bfloat16"]["error"].endswith("exit status 1: boom")
  # ALBERT-base's encoder at 8 tokens: 1.364 GFLOP, 6.96 ms at 196 GFLOP/s.
  short = m["short_request_matmuls"]
  assert short["details"]["matmul_flops"] == 1_364_066_304
  assert short["value"] == pytest.approx(6.9595, abs=1e-4) and short["unit"] == "ms"
  assert m["saved_model_bfloat16_8x1"]["value"] == 10.0 and fidelity == [{"fidelity": "onnx_int8"}]
  # Without bf16 units nothing bf16 is measured.
  calls.clear()
  m, _ = cpu_check.measure(plan._replace(bf16=False))
  assert ("ours", "mixed_bfloat16") not in calls and "saved_model_bfloat16_8x1" not in m
  assert "keras_hub_forward_mixed_bfloat16" not in m


def test_rounds_give_each_measurement_its_median_and_a_failed_round_fails_it(monkeypatch):
  values = iter([3.0, 1.0, 2.0])
  rounds = []

  def once(plan):
    value = next(values)
    rounds.append(value)
    m = {"ours_forward_float32": figure(value, jit_compile=False),
         "hf_torch_forward_float32": {"skipped": "no hf_torch"},
         "best_int8": figure(value, "ms") if value != 1.0 else {"error": "export failed"}}
    return m, [{"fidelity": f"round {len(rounds)}"}]

  monkeypatch.setattr(cpu_check, "measure_once", once)
  plan = cpu_check.Plan("base", BASE, 5, 2, {"hf_torch": None, "keras_hub": None}, False, None,
                        rounds=3)
  m, fidelity = cpu_check.measure(plan)
  assert rounds == [3.0, 1.0, 2.0]
  assert m["ours_forward_float32"]["value"] == 2.0  # the median, not the mean or the last
  assert m["ours_forward_float32"]["details"] == {"jit_compile": False, "rounds": [3.0, 1.0, 2.0]}
  assert m["hf_torch_forward_float32"] == {"skipped": "no hf_torch"}
  assert m["best_int8"] == {"error": "export failed"}
  assert fidelity == [{"fidelity": "round 1"}]
  # One round (the default) is the round's own measurements, untouched.
  values = iter([5.0])
  m, _ = cpu_check.measure(plan._replace(rounds=1))
  assert m["ours_forward_float32"] == figure(5.0, jit_compile=False)


def test_short_request_without_a_gemm_rate_is_an_error():
  config = AlbertConfig.from_preset("base")
  with pytest.raises(RuntimeError, match="no float32 GEMM rate: boom"):
    cpu_check.short_request_matmuls(config, 8, {"error": "boom"})


def test_int8_measurements_pick_the_fastest_of_each_kind():
  each = {"tflite_int8": 37.0, "tflite_int8_no_xnnpack": 90.0, "onnx_int8": 46.2,
          "onnx_int8_static": 60.5, "onnx_int8_static_qoperator": {"error": "boom"}}
  m = cpu_check.int8_measurements(each, 2)
  assert m["best_int8"]["value"] == 37.0
  assert m["best_int8"]["details"]["best_int8_runtime"] == "tflite_int8"
  assert m["best_int8"]["details"]["int8_p50_ms"] == each
  assert m["best_static_int8"]["value"] == 60.5
  # Dynamic int8 of the static exports' format (ONNX): TFLite's 37 ms is not it.
  assert m["best_dynamic_int8"] == figure(46.2, "ms", best_dynamic_int8_runtime="onnx_int8")
  m = cpu_check.int8_measurements({"onnx_int8": {"error": "e1"}, "onnx_int8_static": 5.0}, 2)
  assert m["best_int8"]["value"] == 5.0
  assert m["best_dynamic_int8"]["error"] == ("no dynamic int8 export of onnx could be timed: "
                                             "onnx_int8: e1")
  assert cpu_check.int8_runtimes() == [r for r in benchmark.PORTABLE_RUNTIMES if "int8" in r]
  assert [r for r in cpu_check.int8_runtimes() if cpu_check.is_static(r)] == [
      "onnx_int8_static", "onnx_int8_static_qoperator"]


def serving_line(runtime, batch, p50, tokens=128, signature="tokens"):
  return {"mode": "serving", "runtime": runtime, "signature": signature, "tokens": tokens,
          "batch_size": batch, "p50_ms": p50}


def test_measurements_read_the_lines_the_bars_name(monkeypatch):
  seen = {}
  outputs = {
      "keras_hub forward and train": [
          {"mode": m, "mixed_precision": p, "seconds_per_step": s, "keras_hub": "0.32.0",
           "threads": 2, "jit_compile": False}
          for (m, p), s in {("forward", "float32"): 1.16, ("train", "float32"): 3.5}.items()],
      "our float32 forward and train": [
          {"mode": "forward", "seconds_per_step": 1.02, "jit_compile": False, "threads": 2,
           "peak_tflops": 0.196, "peak_source": "GEMM probe: 2048^3 float32 matmul, measured"},
          {"mode": "train", "seconds_per_step": 3.22, "jit_compile": False, "threads": 2,
           "peak_tflops": 0.196, "peak_source": "GEMM probe: 2048^3 float32 matmul, measured"}],
      "the float32 SavedModel": [serving_line("saved_model", 1, 30.0, 128, "text"),
                                 serving_line("saved_model", 1, 169.6),
                                 serving_line("saved_model", 8, 1076.0),
                                 serving_line("saved_model", 1, 30.9, 8),
                                 serving_line("saved_model", 8, 99.0, 8)],
      "the onnx_int8 export": [serving_line("onnx_int8", 1, 46.2),
                               {"mode": "fidelity", "runtime": "onnx_int8",
                                "pooled_cosine": 0.9995, "sequence_cosine": 0.9991}],
  }

  def lines(argv, what, env=None):
    key = next((k for k in outputs if what.startswith(k)), what)
    seen[key] = (argv, env)
    return outputs.get(key, [])  # the tflite_int8 run prints nothing

  monkeypatch.setattr(cpu_check, "_json_lines", lines)
  kh = cpu_check.measure_peer("keras_hub", "/kh/python", "base", BASE, ["float32"], 3)
  assert kh["keras_hub_train_float32"] == figure(3.5, keras_hub_keras_hub="0.32.0",
                                                 keras_hub_threads=2, keras_hub_jit_compile=False)
  argv, env = seen["keras_hub forward and train"]
  assert argv[:2] == ["/kh/python", os.path.join(REPO_ROOT, "tools", "kerashub_bench.py")]
  assert "--mixed_precision=float32" in argv and "--steps=3" in argv and "--batch_size=8" in argv
  assert env["KERAS_BACKEND"] == "tensorflow"
  ours = cpu_check.measure_ours("base", BASE, "float32", 3)
  assert ours["ours_forward_float32"] == figure(1.02, jit_compile=False, threads=2)
  assert ours["gemm_float32"]["value"] == 0.196
  assert "--optimizer=adamw" in seen["our float32 forward and train"][0]
  served = cpu_check.measure_saved_model("base", "float32", BASE)
  assert served == {"saved_model_float32_128x1": figure(169.6, "ms"),
                    "saved_model_float32_128x8": figure(1076.0, "ms"),
                    "saved_model_float32_8x1": figure(30.9, "ms")}
  assert "--serving_tokens=8,128" in seen["the float32 SavedModel"][0]
  int8, fidelity = cpu_check.measure_int8("base", ["onnx_int8", "tflite_int8"], 128, 2)
  assert int8["best_int8"]["value"] == 46.2
  assert "printed no line" in int8["best_int8"]["details"]["int8_p50_ms"]["tflite_int8"]["error"]
  assert "--serving_fidelity" in seen["the onnx_int8 export"][0]
  assert fidelity[0] == {"fidelity": "onnx_int8", "model": "random weights of --config=base",
                         "pooled_cosine": 0.9995, "sequence_cosine": 0.9991,
                         "goal": "pooled and sequence cosine >= 0.999, no changed argmax",
                         "meets_goal": True}
  assert fidelity[1]["fidelity"] == "tflite_int8" and fidelity[1]["meets_goal"] is False
  assert "printed no line" in fidelity[1]["error"]


def test_fidelity_goal():
  line = {"pooled_cosine": 0.9995, "sequence_cosine": 0.999, "argmax_changed": 0}
  assert cpu_check.fidelity_meets_goal(line)
  assert not cpu_check.fidelity_meets_goal(dict(line, sequence_cosine=0.99899))
  assert not cpu_check.fidelity_meets_goal(dict(line, argmax_changed=1))
  assert not cpu_check.fidelity_meets_goal({"error": "boom"})


def test_run_check_reads_the_cpu_and_puts_fidelity_before_the_summary(monkeypatch):
  seen = []
  monkeypatch.setattr(cpu_check, "measure", lambda plan: seen.append(plan) or (
      zen4_measurements(), [{"fidelity": "onnx_int8", "model": "m", "meets_goal": True}]))
  plan = cpu_check.Plan("base", BASE, 5, 2, {"hf_torch": "/hf", "keras_hub": None}, None, None)
  lines = cpu_check.run_check(plan, AVX2_ONLY)
  assert seen[0].bf16 is False
  assert [l.get("comparison") for l in lines[:14]] == list(table(AVX2_ONLY))
  assert lines[14]["fidelity"] == "onnx_int8" and lines[-1]["summary"] == "cpu_check"
  assert lines[-1]["units"] == AVX2_ONLY and lines[-1]["bf16_units"] is False
  assert lines[-1]["peers"] == {"hf_torch": "/hf", "keras_hub": None}
  # float32: 1.02 / 1.45 and 1.02 / 1.16 pass, train 3.22 / 3.5 = 0.92 fails; int8 4.58x >= 3.
  assert lines[-1]["failed"] == ["float32_train_vs_keras_hub", "short_request_float32_vs_matmuls"]


def test_the_tool_names_a_config_too_short_for_the_bars():
  config = os.path.join(REPO_ROOT, "tests", "testdata", "original_model", "albert_config.json")
  result = subprocess.run([sys.executable, TOOL, f"--config={config}"], cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=120, check=False)
  assert result.returncode == 2
  assert result.stderr.strip().splitlines()[-1] == (
      f"error: --config={config}: max_position_embeddings is 64, under the 128 tokens the bars "
      "are at; use a config with more positions, or shorter --serving_tokens/--short_tokens/"
      "--seq_length")


def test_a_classifier_needs_its_config(tmp_path):
  checkpoint = str(tmp_path / "model.ckpt-4")
  with pytest.raises(Exception, match="--classifier_config=.*albert_config.json: no such file"):
    cpu_check.check_flags("base", BASE, checkpoint, None)
  (tmp_path / "albert_config.json").write_text("{}")
  assert cpu_check.check_flags("base", BASE, checkpoint, None) == str(
      tmp_path / "albert_config.json")
  assert cpu_check.check_flags("base", BASE, None, None) is None


# -- tools/kerashub_bench.py -----------------------------------------------------------------------
def test_kerashub_backbone_is_our_config():
  values = kerashub_bench.backbone_values(hf_torch_bench.config_path("base"))
  assert values == {"vocabulary_size": 30000, "num_layers": 12, "num_heads": 12,
                    "embedding_dim": 128, "hidden_dim": 768, "intermediate_dim": 3072,
                    "num_groups": 1, "num_inner_repetitions": 1, "dropout": 0,
                    "max_sequence_length": 512, "num_segments": 2}


def test_kerashub_refuses_what_it_cannot_build(tmp_path):
  base = AlbertConfig.from_preset("base")
  path = tmp_path / "albert_config.json"
  path.write_text(base.replace(parameter_sharing="not-shared").to_json_string())
  assert kerashub_bench.backbone_values(str(path))["num_groups"] == 12
  path.write_text(base.replace(parameter_sharing="shared-FFN").to_json_string())
  with pytest.raises(hf_torch_bench.UsageError, match="parameter_sharing 'shared-FFN'"):
    kerashub_bench.backbone_values(str(path))
  args = kerashub_bench.parse_args(["--mode=train", "--mixed_precision=mixed_bfloat16"])
  assert (args.mode, args.mixed_precision, args.jit_compile) == (
      ["train"], ["mixed_bfloat16"], "auto")


def test_kerashub_batch_has_the_masked_lm_inputs():
  inputs, labels, weights = kerashub_bench.synthetic_batch(100, 2, 16, 3)
  assert {k: v.shape for k, v in inputs.items()} == {
      "token_ids": (2, 16), "segment_ids": (2, 16), "padding_mask": (2, 16),
      "mask_positions": (2, 3)}
  assert labels.shape == weights.shape == (2, 3) and weights.sum() == 6
  assert inputs["mask_positions"].max() < 16 and inputs["token_ids"].max() < 100
  assert inputs["token_ids"].dtype == np.int32


# -- end to end ------------------------------------------------------------------------------------
@pytest.mark.slow
def test_the_tool_end_to_end_at_a_tiny_shape(tmp_path):
  out = tmp_path / "cpu_check.json"
  result = subprocess.run(
      [sys.executable, TOOL, f"--config={TINY_CONFIG}", "--batch_size=2", "--seq_length=16",
       "--num_predictions=3", "--serving_tokens=16", "--serving_batch=2", "--short_tokens=8",
       "--steps=1", f"--kerashub_python={sys.executable}", f"--output_json={out}"],
      cwd=REPO_ROOT, capture_output=True, text=True, timeout=900, check=False)
  printed = [json.loads(line) for line in result.stdout.splitlines()]
  assert printed and json.loads(out.read_text()) == printed, result.stderr[-3000:]
  summary = printed[-1]
  assert result.returncode == summary["exit_status"] in (0, 1)  # speeds are not asserted here
  bars = [l for l in printed if "comparison" in l]
  planned = cpu_check.comparisons(cpu_check.Shape(2, 16, 3, 16, 2, 8), hardware.matrix_units(),
                                  hardware.cpu_name())
  assert [l["comparison"] for l in bars] == [c.name for c in planned]
  # A bar this CPU lacks the units for is skipped for that (the bf16 bars on an AVX2-only CPU),
  # before any peer is asked for.
  for line, comparison in zip(bars, planned):
    if comparison.skipped:
      assert line["passed"] is None and line["skipped"] == comparison.skipped
    elif line["comparison"].endswith("hf_torch"):
      assert line["passed"] is None and line["skipped"].startswith("no --hf_python given")
    elif "skipped" not in line:  # measured: every figure there, no failure to measure
      assert "error" not in line, line
      assert line["ours"] > 0 and line["theirs"] > 0 and isinstance(line["passed"], bool)
      assert line["ratio"] == pytest.approx(
          line["ours"] / line["theirs"] if line["ratio_of"].startswith("ours")
          else line["theirs"] / line["ours"], rel=1e-3, abs=1e-4)
  fidelity = [l for l in printed if "fidelity" in l]
  assert [l["fidelity"] for l in fidelity] == cpu_check.int8_runtimes()
  for line in fidelity:
    assert "error" not in line, line
    assert 0.99 < line["pooled_cosine"] <= 1.0 + 1e-6 and 0.99 < line["sequence_cosine"]
    assert line["examples"] == benchmark.FIDELITY_BATCH and line["tokens"] == 16
  assert summary["summary"] == "cpu_check" and summary["cpu"] == hardware.describe()
  assert summary["peers"]["keras_hub"] == sys.executable
  assert summary["shape"]["serving_tokens"] == 16
