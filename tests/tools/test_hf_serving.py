"""tools/hf_torch_bench.py --mode=serving, the HF peer of our SavedModel's one request: its flags,
the command tools/cpu_check.py builds and the lines it reads back (in this interpreter, without
torch), and (slow) a run end to end on the tiny test config in an interpreter with torch,
transformers, onnxruntime and onnx: HF_SERVING_PYTHON, else /tmp/hfvenv/bin/python; without one
those tests skip. Speeds are never asserted, only that each runtime answered."""

import os
import subprocess
import sys

import numpy as np
import pytest

from helpers import REPO_ROOT

sys.path.insert(0, os.path.join(REPO_ROOT, "tools"))
import hf_torch_bench
import kerashub_bench

TOOL = os.path.join(REPO_ROOT, "tools", "hf_torch_bench.py")
# max_position_embeddings 64, 3 layers of width 32: a run of every runtime takes seconds.
TINY_CONFIG = os.path.join(REPO_ROOT, "tests", "testdata", "original_model",
                           "albert_config.json")
HF_PYTHON = os.environ.get("HF_SERVING_PYTHON", "/tmp/hfvenv/bin/python")
# The ONNX export in float32 against torch eager float32 on the same request. Both compute in
# float32; only the kernels' summation order and ONNX Runtime's fusions (LayerNorm, GELU, the
# attention's matmuls) differ, which at the tiny config's widths (64 at most) and magnitudes
# (|sequence_output| about 3) leaves differences near 1e-6 (7e-7 seen). 1e-5 is the tolerance
# Hugging Face's exporter validates its own ALBERT exports at (optimum's default
# ATOL_FOR_VALIDATION, which its ALBERT config keeps): a wrong axis, a dropped mask or an output
# of the wrong layer would miss it by orders of magnitude.
ONNX_FLOAT32_ATOL = 1e-5


def hf_python_or_skip():
  """HF_PYTHON, or pytest.skip naming why it cannot run the serving mode."""
  if not os.access(HF_PYTHON, os.X_OK):
    pytest.skip(f"no interpreter at {HF_PYTHON} (set HF_SERVING_PYTHON to one with torch, "
                f"transformers, onnxruntime and onnx: {hf_torch_bench.VENV_HINT})")
  try:
    hf_torch_bench.check_interpreter(HF_PYTHON)
  except hf_torch_bench.UsageError as e:
    pytest.skip(str(e))
  return HF_PYTHON


def run_serving(python, *flags, env=None):
  """The tool's --mode=serving run on the tiny config at 8 tokens, through --hf_python as
  tools/cpu_check.py runs it: (the CompletedProcess, its parsed lines)."""
  argv = hf_torch_bench.serving_command(sys.executable, [8], threads=1, config=TINY_CONFIG,
                                        requests=3, warmup=1, tool=TOOL)
  argv += [f"--hf_python={python}", *flags]
  result = subprocess.run(argv, cwd=REPO_ROOT, capture_output=True, text=True, timeout=600,
                          env=env, check=False)
  assert result.returncode == 0, result.stderr[-3000:]
  return result, hf_torch_bench.parse_lines(result.stdout)


# -- in this interpreter --------------------------------------------------------------------------
def test_serving_command_round_trips_through_the_flags():
  argv = hf_torch_bench.serving_command("/hf/python", [8, 128], threads=4, config="base")
  assert argv == ["/hf/python", TOOL, "--mode=serving", "--config=base",
                  "--serving_tokens=8,128", "--serving_batch_size=1", "--serving_threads=4"]
  args = hf_torch_bench.parse_args(argv[2:])
  assert args.mode == ["serving"] and args.serving_tokens == [8, 128]
  assert args.serving_batch_size == 1 and args.serving_threads == 4
  assert args.serving_runtimes == list(hf_torch_bench.SERVING_RUNTIMES)
  assert (args.serving_requests, args.serving_warmup) == (30, 5)
  argv = hf_torch_bench.serving_command("/py", (32,), batch_size=2, runtimes=["onnx"],
                                        requests=3, warmup=0, tool="/t/x.py")
  assert argv == ["/py", "/t/x.py", "--mode=serving", "--serving_tokens=32",
                  "--serving_batch_size=2", "--serving_runtimes=onnx", "--serving_requests=3",
                  "--serving_warmup=0"]
  assert hf_torch_bench.parse_args(argv[2:]).serving_runtimes == ["onnx"]


def test_serving_flags_defaults_and_refusals(capsys):
  # forward,train stay the default: tools/cpu_check.py's step bars read those lines.
  args = hf_torch_bench.parse_args([])
  assert args.mode == ["forward", "train"]
  assert args.serving_threads == os.cpu_count() and args.serving_tokens == [8, 128]
  assert hf_torch_bench.parse_args(["--mode=forward,serving"]).mode == ["forward", "serving"]
  for flag, message in [("--serving_tokens=8,0", "give positive integers"),
                        ("--serving_tokens=a", "give positive integers"),
                        ("--serving_runtimes=tflite", "choose from torch,torch_bf16"),
                        ("--serving_threads=0", "--serving_threads=0: must be at least 1"),
                        ("--serving_requests=0", "--serving_requests=0: must be at least 1"),
                        ("--serving_warmup=-1", "--serving_warmup=-1: must be 0 or more"),
                        ("--mode=infer", "choose from forward,train,serving")]:
    with pytest.raises(SystemExit):
      hf_torch_bench.parse_args([flag])
    assert message in capsys.readouterr().err
  # tools/kerashub_bench.py shares the parser but has no serving mode.
  with pytest.raises(SystemExit):
    kerashub_bench.parse_args(["--mode=serving"])
  assert "choose from forward,train " in capsys.readouterr().err


def test_serving_tokens_beyond_the_positions_are_refused_before_torch_loads():
  result = subprocess.run(
      [sys.executable, TOOL, "--mode=serving", f"--config={TINY_CONFIG}",
       "--serving_tokens=8,128", "--hf_python=/nonexistent/python"],
      cwd=REPO_ROOT, capture_output=True, text=True, timeout=60, check=False)
  assert result.returncode == 2 and result.stdout == ""
  assert result.stderr.strip().splitlines()[-1] == (
      f"error: --serving_tokens=8,128: 128 over --config={TINY_CONFIG}'s "
      "max_position_embeddings (64)")


def test_serving_results_keys_the_serving_lines():
  stdout = "\n".join([
      "a library's notice",
      '{"mode": "forward", "mixed_precision": "float32", "seconds_per_step": 0.1}',
      '{"mode": "serving", "runtime": "hf_torch", "precision": "float32", "tokens": 8, '
      '"batch_size": 1, "p50_ms": 1.5}',
      '{"mode": "serving", "runtime": "hf_torch", "precision": "bfloat16", "tokens": 8, '
      '"batch_size": 1, "skipped": "no bf16 units"}'])
  lines = hf_torch_bench.parse_lines(stdout)
  assert len(lines) == 3
  results = hf_torch_bench.serving_results(lines)
  assert sorted(results) == [("hf_torch", "bfloat16", 8, 1), ("hf_torch", "float32", 8, 1)]
  assert results["hf_torch", "float32", 8, 1]["p50_ms"] == 1.5
  # Every runtime name maps to one (runtime, precision): the key is unambiguous.
  assert len(set(hf_torch_bench.SERVING_RUNTIMES.values())) == len(
      hf_torch_bench.SERVING_RUNTIMES)


def test_bf16_units_reads_the_cpu_flags(tmp_path):
  info = tmp_path / "cpuinfo"
  info.write_text("processor\t: 0\nflags\t\t: fpu avx2 avx512f avx512_bf16 amx_bf16 amx_int8\n"
                  "processor\t: 1\nflags\t\t: fpu avx2 avx512f avx512_bf16 amx_bf16 amx_int8\n")
  assert hf_torch_bench.bf16_units(str(info)) == ["amx_bf16", "avx512_bf16"]
  info.write_text("processor\t: 0\nflags\t\t: fpu avx2 avx512f avx512_vnni\n"
                  "bugs\t\t: avx512_bf16\n")  # only a flags line counts
  assert hf_torch_bench.bf16_units(str(info)) == []
  with pytest.raises(hf_torch_bench.Unavailable, match="cannot read .*missing") as caught:
    hf_torch_bench.bf16_units(str(tmp_path / "missing"))
  assert caught.value.key == "skipped"


def test_percentiles_are_numpys():
  seconds = [0.004, 0.001, 0.003, 0.002, 0.0105]
  for q in (50, 99):
    assert hf_torch_bench.percentile_ms(seconds, q) == pytest.approx(
        np.percentile(np.asarray(seconds) * 1000, q), rel=1e-3)
  assert hf_torch_bench.percentile_ms([0.002], 99) == 2.0


def test_a_missing_package_names_what_to_install():
  error = hf_torch_bench.missing_package(ModuleNotFoundError("no", name="onnxruntime"))
  assert error.key == "error" and str(error).endswith("-m pip install onnxruntime onnx")
  assert str(hf_torch_bench.missing_package(ModuleNotFoundError("no", name="numpy"))).endswith(
      "-m pip install numpy")


# -- end to end, in the interpreter with torch ----------------------------------------------------
@pytest.mark.slow
def test_serving_times_each_runtime_once_and_onnx_matches_torch():
  python = hf_python_or_skip()
  _, lines = run_serving(python)
  wanted = list(hf_torch_bench.SERVING_RUNTIMES.values())
  assert [(l["runtime"], l["precision"]) for l in lines] == wanted
  for line in lines:
    assert line["mode"] == "serving" and line["tokens"] == 8 and line["batch_size"] == 1
    assert line["threads"] == 1 and line["tensorflow_loaded"] is False
    assert line["torch"] and line["transformers"]
    if "p50_ms" in line:
      assert 0 < line["p50_ms"] <= line["p99_ms"] and line["requests"] == 3
      assert set(line["max_abs_diff"]) == {"sequence_output", "pooled_output"}
    else:
      reason = line.get("skipped") or line.get("error")
      assert reason, line
  results = hf_torch_bench.serving_results(lines)
  torch_float32 = results["hf_torch", "float32", 8, 1]
  assert torch_float32["max_abs_diff"] == {"sequence_output": 0.0, "pooled_output": 0.0}
  onnx = results["hf_onnxruntime", "float32", 8, 1]
  assert "p50_ms" in onnx, onnx  # the interpreter the tests name has onnxruntime and onnx
  assert onnx["exporter"] == hf_torch_bench.ONNX_EXPORTER and onnx["onnxruntime"]
  for output, diff in onnx["max_abs_diff"].items():
    assert diff <= ONNX_FLOAT32_ATOL, (output, diff)
  bf16 = results["hf_torch", "bfloat16", 8, 1]
  assert ("p50_ms" in bf16) == bool(bf16.get("bf16_units")), bf16
  assert "quantization" in results["hf_torch", "int8", 8, 1]
  assert "quantization" in results["hf_onnxruntime", "int8", 8, 1]


@pytest.mark.slow
def test_serving_without_onnxruntime_names_it_and_still_times_torch(tmp_path):
  python = hf_python_or_skip()
  # A package that fails to import as an absent one does, ahead of the installed one.
  shadow = tmp_path / "onnxruntime"
  shadow.mkdir()
  (shadow / "__init__.py").write_text(
      "raise ModuleNotFoundError(\"No module named 'onnxruntime'\", name='onnxruntime')\n")
  env = dict(os.environ, PYTHONPATH=str(tmp_path))
  _, lines = run_serving(python, "--serving_runtimes=torch,onnx,onnx_int8", env=env)
  assert [(l["runtime"], l["precision"]) for l in lines] == [
      ("hf_torch", "float32"), ("hf_onnxruntime", "float32"), ("hf_onnxruntime", "int8")]
  assert lines[0]["p50_ms"] > 0
  for line in lines[1:]:
    assert "p50_ms" not in line
    assert line["error"].startswith("no module 'onnxruntime' in ")
    assert line["error"].endswith("-m pip install onnxruntime onnx")
