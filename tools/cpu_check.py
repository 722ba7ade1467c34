"""Issue 38's check, on any x86 CPU, in one run: ours against the peers (HF torch, keras-hub) at
float32 and, where the CPU has bf16 units, at bf16; the bf16 SavedModel against the float32
one; every int8 runtime against the float32 SavedModel; the short request against its matmuls;
and each int8 runtime's fidelity to float32.

  python3 tools/cpu_check.py --hf_python=/tmp/hfvenv/bin/python --kerashub_python=python3 \\
      --output_json=cpu_check.json

It installs nothing. Each peer runs in the interpreter its flag names: --hf_python one with torch
and transformers (tools/hf_torch_bench.py: python3 -m venv /tmp/hfvenv && /tmp/hfvenv/bin/pip
install torch transformers numpy), --kerashub_python one with keras-hub (tools/kerashub_bench.py;
albert_tf's own interpreter where keras-hub is installed). A peer whose flag is not given, or
whose interpreter cannot import its packages, has its bars reported `skipped` with why.

The shape: --config (ALBERT-base), --batch_size x --seq_length (8 x 128), --num_predictions (20)
for the forward and training steps (both sides: random weights, the same config; ours with
tools/benchmark.py's defaults and --optimizer=adamw, as the peers' steps); the SavedModels'
tokens signature at --serving_tokens (128), batch 1 and --serving_batch (8), and at
--short_tokens (8), batch 1; the int8 exports at --serving_tokens, batch 1, --serving_threads
threads (default: every CPU thread, as the SavedModel's TensorFlow). Which bars apply is decided
from albert_tf.core.hardware (the CPU's flags):

  float32_{forward,train}_vs_{hf_torch,keras_hub}  ours / the peer's seconds per step <= 0.9
                                    (<= 0.9x each peer is <= 0.9x the faster one)
  bf16_{forward,train}_vs_{...}     the same under mixed_bfloat16 (HF: torch autocast bf16),
                                    where the CPU has bf16 units (AMX-BF16 or AVX512-BF16)
  bf16_saved_model_<T>x<B>          float32 SavedModel p50 / bfloat16 SavedModel p50 >= 2.5 on
                                    AMX, >= 1.7 on AVX512-BF16 (T tokens, batch 1 and B)
  best_int8_<T>x1                   float32 SavedModel p50 / the fastest int8 export's >= 8
                                    with AMX-INT8, >= 5 with VNNI, >= 3 on AVX2
  static_int8_vs_dynamic_<T>x1      the fastest static int8 export's p50 / the fastest dynamic
                                    one's of the same format (ONNX) <= 1, with VNNI or AMX-INT8
  short_request_float32_vs_matmuls  the float32 SavedModel's p50 at --short_tokens, batch 1 /
                                    its encoder's matmul FLOPs at the float32 GEMM probe's rate
                                    (tools/benchmark.py's, measured in our float32 run) <= 2
  short_request_bf16_vs_float32     the bfloat16 SavedModel's p50 there / the float32 one's
                                    <= 1, where the CPU has bf16 units

A bar that does not apply to the CPU (or whose peer is missing) has passed null and `skipped`
saying why; a measurement that failed fails its bars, with `error`.

Int8 fidelity (reported, not a bar): each int8 file timed is of one
random-weight model, whose float32 outputs on the same ids are the reference
(tools/benchmark.py --serving_fidelity): one line per runtime with pooled_cosine and
sequence_cosine (the lowest over rows, and over real tokens) and meets_goal (both >= 0.999).
With --classifier_checkpoint (a fine-tuned classifier, its albert_config.json
--classifier_config), every int8 runtime is also exported from it and compared on --fidelity_data
(a TFRecord of its features; default synthetic ids): the same cosines, and argmax_agreement and
argmax_changed of its predicted classes (the goal: none changed).

Each measurement is a program run in a process of its own (tools/benchmark.py,
tools/hf_torch_bench.py, tools/kerashub_bench.py), its JSON lines read back: our figures are taken
under the benchmark's own flag defaults, and no measurement inherits another's threads, memory or
Keras policy. --rounds=N takes every measurement N times, round after round, and each bar reads
the medians (a shared machine's peers moved by up to 20% between single runs).

Prints one JSON line per bar (comparison, ours, theirs, unit, ratio, ratio_of, bar, passed,
ours_is, theirs_is, and skipped / error / details), one per fidelity measurement, then a summary
(the CPU: albert_tf.core.hardware.describe(), its units, the shape, the peers, failed and skipped
bars, the fidelity lines below the goal). Exit status 0 when every bar that applies passes, 1
when one fails (2 for a usage error, as the binaries).
"""

import collections
import json
import os
import statistics
import subprocess
import sys

from absl import flags

import benchmark  # tools/benchmark.py: importable without defining its flags
import hf_torch_bench  # tools/hf_torch_bench.py: the peers' command line and output

from albert_tf.core import cli, errors, hardware
from albert_tf.core import io as albert_io

FLAGS = flags.FLAGS

BENCHMARK = os.path.join(benchmark.REPO_ROOT, "tools", "benchmark.py")
PRECISIONS = ("float32", "mixed_bfloat16")
MODES = ("forward", "train")
# Ours trains with the optimizer the peers' steps use (run_pretraining's default is LAMB: a few
# more elementwise ops per variable, not the comparison's point).
OPTIMIZER = "adamw"

# The peers: their program, what they time, the fields of their lines kept as details, and how a
# missing interpreter is told.
Peer = collections.namedtuple("Peer", ["flag", "tool", "model", "details", "probe", "needs",
                                       "hint"])
PEERS = {
    "hf_torch": Peer("--hf_python", os.path.join(benchmark.REPO_ROOT, "tools",
                                                 "hf_torch_bench.py"),
                     "HF torch AlbertForPreTraining (bf16: torch.autocast)",
                     ("torch", "transformers", "threads", "attention"),
                     "import torch, transformers", "torch and transformers",
                     hf_torch_bench.VENV_HINT),
    "keras_hub": Peer("--kerashub_python", os.path.join(benchmark.REPO_ROOT, "tools",
                                                        "kerashub_bench.py"),
                      "keras-hub AlbertMaskedLM (bf16: Keras' mixed_bfloat16)",
                      ("keras_hub", "threads", "jit_compile"),
                      "import keras_hub", "keras_hub",
                      "give an interpreter with keras-hub (pip install keras-hub)"),
}

# The bars' thresholds.
STEP_BAR = 0.9
BF16_SAVED_MODEL_BARS = (("amx_bf16", 2.5, "AMX-BF16"), ("avx512_bf16", 1.7, "AVX512-BF16"))
INT8_BARS = (("amx_int8", 8.0, "AMX-INT8"), ("avx512_vnni", 5.0, "AVX512-VNNI"),
             ("avx_vnni", 5.0, "AVX-VNNI"), ("avx2", 3.0, "AVX2"))
SHORT_REQUEST_BAR = 2.0
# The int8 fidelity goal: pooled and sequence cosine against float32, and no changed argmax.
FIDELITY_GOAL = 0.999

Shape = collections.namedtuple("Shape", ["batch_size", "seq_length", "num_predictions",
                                         "serving_tokens", "serving_batch", "short_tokens"])
BASE_SHAPE = Shape(8, 128, 20, 128, 8, 8)
Bar = collections.namedtuple("Bar", ["op", "threshold"])
# ratio "time": ours / theirs (lower is better); "speedup": theirs / ours. bar None when the CPU
# lacks the units the bar is for; `skipped` then says why.
Comparison = collections.namedtuple(
    "Comparison", ["name", "ours", "theirs", "ratio", "bar", "skipped", "ours_is", "theirs_is"])
RATIO_OF = {"time": "ours / theirs (time: lower is faster)",
            "speedup": "theirs / ours (speed-up: higher is faster)"}


def define_flags():
  """The command line's flags (only when run as a program, as tools/benchmark.py's)."""
  flags.DEFINE_string("config", "base",
                      "Preset name or path to an albert_config.json (every side builds it). Its "
                      "max_position_embeddings must reach --serving_tokens and --seq_length.")
  flags.DEFINE_string("hf_python", None,
                      "The interpreter that runs tools/hf_torch_bench.py: one with torch and "
                      f"transformers ({hf_torch_bench.VENV_HINT}). Not given: its bars are "
                      "skipped.")
  flags.DEFINE_string("kerashub_python", None,
                      "The interpreter that runs tools/kerashub_bench.py: one with keras-hub "
                      "(python3 here, where it is installed). Not given: its bars are skipped.")
  flags.DEFINE_integer("batch_size", BASE_SHAPE.batch_size,
                       "Forward and training steps: examples per step.", lower_bound=1)
  flags.DEFINE_integer("seq_length", BASE_SHAPE.seq_length,
                       "Forward and training steps: tokens per example.", lower_bound=1)
  flags.DEFINE_integer("num_predictions", BASE_SHAPE.num_predictions,
                       "Forward and training steps: masked-LM predictions per example.",
                       lower_bound=1)
  flags.DEFINE_integer("serving_tokens", BASE_SHAPE.serving_tokens,
                       "The SavedModel and int8 bars' request length.", lower_bound=3)
  flags.DEFINE_integer("serving_batch", BASE_SHAPE.serving_batch,
                       "The bf16 SavedModel bar's batch besides 1.", lower_bound=1)
  flags.DEFINE_integer("short_tokens", BASE_SHAPE.short_tokens,
                       "The short request's length.", lower_bound=3)
  flags.DEFINE_integer("steps", 5, "Timed calls of each forward and training measurement, every "
                       "side (the median is kept).", lower_bound=1)
  flags.DEFINE_integer("rounds", 1, "Times to take every measurement, round after round; each "
                       "bar reads the median of its rounds (3 steadies the verdicts on a shared "
                       "machine, at 3 times the run's length).", lower_bound=1)
  flags.DEFINE_integer("serving_threads", None,
                       "The int8 exports' runtime threads (LiteRT, ONNX Runtime). Default: every "
                       "CPU thread, as many as the SavedModel's TensorFlow uses.", lower_bound=1)
  flags.DEFINE_string("classifier_checkpoint", None,
                      "A fine-tuned classifier's checkpoint: every int8 runtime is also exported "
                      "from it and its outputs and predicted classes compared with float32's.")
  flags.DEFINE_string("classifier_config", None,
                      "The classifier's albert_config.json (default: the one beside "
                      "--classifier_checkpoint).")
  flags.DEFINE_string("fidelity_data", None,
                      "The classifier's features to compare on: a TFRecord of input_ids/"
                      "input_mask/segment_ids (run_classifier's cached features); default: "
                      "synthetic ids.")
  flags.DEFINE_string("output_json", None,
                      "Where to write the lines (bars, fidelity, summary) as one JSON list, "
                      "atomically.")


# -- which bars apply ------------------------------------------------------------------------------
def has_bf16_units(units):
  """Whether `units` (hardware.matrix_units()) has bf16 matmul units: AMX-BF16 or AVX512-BF16."""
  return units["amx_bf16"] or units["avx512_bf16"]


def has_vnni(units):
  """Whether `units` has int8 dot products: AVX512-VNNI, AVX-VNNI or AMX-INT8."""
  return units["avx512_vnni"] or units["avx_vnni"] or units["amx_int8"]


def _first_bar(table, units):
  """(threshold, unit name) of the first row of `table` whose unit the CPU has, or None."""
  return next(((bar, name) for unit, bar, name in table if units[unit]), None)


def comparisons(shape, units, cpu):
  """Every bar of the check at `shape`, with its threshold on a CPU of `units`.

  Args:
    shape: a Shape.
    units: {unit: bool}, as hardware.matrix_units() gives it.
    cpu: the CPU's name, for the skipped bars' reasons.

  Returns:
    A list of Comparison: bar None and `skipped` set where the CPU lacks the bar's units.
  """
  t, b, short = shape.serving_tokens, shape.serving_batch, shape.short_tokens
  step = f"batch {shape.batch_size} x {shape.seq_length} tokens, {shape.num_predictions} masked"
  no_bf16 = (None if has_bf16_units(units) else
             f"no bf16 units on {cpu}: the bf16 bars are for CPUs with AMX-BF16 or AVX512-BF16 "
             "(without them TensorFlow converts bfloat16 to float32, slower than float32)")
  out = []
  for precision, label, skipped in (("float32", "float32", None),
                                    ("mixed_bfloat16", "bf16", no_bf16)):
    for mode in MODES:
      for peer, about in PEERS.items():
        out.append(Comparison(
            f"{label}_{mode}_vs_{peer}", f"ours_{mode}_{precision}", f"{peer}_{mode}_{precision}",
            "time", None if skipped else Bar("<=", STEP_BAR), skipped,
            f"our {precision} {mode} step, seconds ({step}; tools/benchmark.py)",
            f"{about} {precision} {mode} step, seconds"))
  served = lambda precision, tokens, batch: (
      f"{precision} SavedModel, tokens signature, {tokens} tokens, batch {batch}, p50 ms")
  saved_bar = _first_bar(BF16_SAVED_MODEL_BARS, units)
  for batch in sorted({1, b}):
    out.append(Comparison(
        f"bf16_saved_model_{t}x{batch}", f"saved_model_bfloat16_{t}x{batch}",
        f"saved_model_float32_{t}x{batch}", "speedup",
        Bar(">=", saved_bar[0]) if saved_bar else None, no_bf16,
        served("bfloat16", t, batch), served("float32", t, batch)))
  int8_bar = _first_bar(INT8_BARS, units)
  out.append(Comparison(
      f"best_int8_{t}x1", "best_int8", f"saved_model_float32_{t}x1", "speedup",
      Bar(">=", int8_bar[0]) if int8_bar else None,
      None if int8_bar else f"no AVX2 on {cpu}: the int8 bar is for x86 CPUs with AVX2 or more",
      f"the fastest int8 export, {t} tokens, batch 1, p50 ms", served("float32", t, 1)))
  out.append(Comparison(
      f"static_int8_vs_dynamic_{t}x1", "best_static_int8", "best_dynamic_int8", "time",
      Bar("<=", 1.0) if has_vnni(units) else None,
      None if has_vnni(units) else (f"no VNNI or AMX-INT8 on {cpu}: static int8 need not beat "
                                    "dynamic without int8 dot products"),
      f"the fastest static int8 export, {t} tokens, batch 1, p50 ms",
      f"the fastest dynamic int8 export of the same format, {t} tokens, batch 1, p50 ms"))
  out.append(Comparison(
      "short_request_float32_vs_matmuls", f"saved_model_float32_{short}x1",
      "short_request_matmuls", "time", Bar("<=", SHORT_REQUEST_BAR), None,
      served("float32", short, 1),
      f"its encoder's matmul FLOPs at {short} tokens, batch 1, at the float32 GEMM probe's "
      "rate, ms"))
  out.append(Comparison(
      "short_request_bf16_vs_float32", f"saved_model_bfloat16_{short}x1",
      f"saved_model_float32_{short}x1", "time", None if no_bf16 else Bar("<=", 1.0), no_bf16,
      served("bfloat16", short, 1), served("float32", short, 1)))
  return out


def bar_units(units):
  """Which thresholds apply on a CPU of `units`: {"bf16_saved_model": "AMX-BF16" or ..., or None,
  "best_int8": "AMX-INT8" or ..., or None}, for the summary."""
  saved, int8 = _first_bar(BF16_SAVED_MODEL_BARS, units), _first_bar(INT8_BARS, units)
  return {"bf16_saved_model": saved and saved[1], "best_int8": int8 and int8[1]}


# -- the verdicts ----------------------------------------------------------------------------------
def holds(bar, ratio):
  """Whether `ratio` meets `bar` (a Bar)."""
  return ratio <= bar.threshold if bar.op == "<=" else ratio >= bar.threshold


def comparison_line(comparison, measurements):
  """One bar's line.

  Args:
    comparison: a Comparison.
    measurements: {key: {"value": float, "unit": str, "details"?: {...}}, or {"error": str}, or
      {"skipped": str} (a peer not run)}; keys absent when not measured.

  Returns:
    {comparison, ours, theirs, unit, ratio, ratio_of, bar, passed, ours_is, theirs_is}, with
    `skipped` when the bar does not apply (passed null, whatever was measured), `error` when a
    measurement failed (passed false), and `details`, the fields the measurements add.
  """
  c = comparison
  ours, theirs = measurements.get(c.ours), measurements.get(c.theirs)
  line = {"comparison": c.name, "ours": None, "theirs": None, "unit": None, "ratio": None,
          "ratio_of": RATIO_OF[c.ratio],
          "bar": f"{c.bar.op} {c.bar.threshold:g}" if c.bar else None,
          "passed": None, "ours_is": c.ours_is, "theirs_is": c.theirs_is}
  have = [m for m in (ours, theirs) if m is not None and "value" in m]
  if len(have) == 2:
    line.update(ours=ours["value"], theirs=theirs["value"], unit=ours["unit"])
    ratio = (ours["value"] / theirs["value"] if c.ratio == "time"
             else theirs["value"] / ours["value"])
    line["ratio"] = round(ratio, 4)
  details = {k: v for m in (ours, theirs) if m for k, v in m.get("details", {}).items()}
  if details:
    line["details"] = details
  skipped = c.skipped or next((m["skipped"] for m in (ours, theirs) if m and "skipped" in m),
                              None)
  failures = [f"{key}: {m['error']}" for key, m in ((c.ours, ours), (c.theirs, theirs))
              if m is not None and "error" in m]
  if skipped:
    line["skipped"] = skipped
  elif failures or len(have) < 2:
    line["passed"] = False
    line["error"] = "; ".join(failures) or "not measured"
  else:
    line["passed"] = holds(c.bar, line["ratio"])
  return line


def exit_status(lines):
  """1 when a bar failed, else 0 (every bar passed or was skipped)."""
  return 1 if any(line.get("passed") is False for line in lines if "comparison" in line) else 0


def fidelity_meets_goal(line):
  """Whether a fidelity line meets the fidelity goal: both cosines >= FIDELITY_GOAL and no
  changed argmax (False for a line that failed)."""
  return ("error" not in line and line["pooled_cosine"] >= FIDELITY_GOAL
          and line["sequence_cosine"] >= FIDELITY_GOAL and not line.get("argmax_changed"))


def summary_line(lines, units, shape, peers):
  """The last line: the CPU, the bars' thresholds on it, the verdict (passed null when every bar
  was skipped), and the fidelity lines below the goal.

  Args:
    lines: the bar and fidelity lines.
    units: hardware.matrix_units().
    shape: the Shape measured.
    peers: {peer: its interpreter, or why it was skipped}.
  """
  bars = [line for line in lines if "comparison" in line]
  failed = [line["comparison"] for line in bars if line["passed"] is False]
  skipped = [line["comparison"] for line in bars if "skipped" in line]
  below = [f"{line['fidelity']} ({line['model']})" for line in lines
           if "fidelity" in line and not line["meets_goal"]]
  return {"summary": "cpu_check", "cpu": hardware.describe(), "units": units,
          "bf16_units": bool(has_bf16_units(units)), "thresholds_for": bar_units(units),
          "shape": shape._asdict(), "peers": peers,
          "passed": None if len(skipped) == len(bars) else not failed,
          "failed": failed, "skipped": skipped, "fidelity_below_goal": below,
          "exit_status": exit_status(lines)}


# -- the measurements ------------------------------------------------------------------------------
def int8_runtimes():
  """tools/benchmark.py's portable runtimes that run int8, as its table has them now."""
  return [name for name in benchmark.PORTABLE_RUNTIMES if "int8" in name]


def is_static(runtime):
  """Whether `runtime` (PORTABLE_RUNTIMES) is a statically quantized export."""
  return benchmark.PORTABLE_RUNTIMES[runtime][2].get("quantize") == "static"


def _json_lines(argv, what, env=None):
  """Runs argv; returns its stdout's JSON lines. Raises RuntimeError naming `what` and the end
  of its stderr when it fails."""
  print(f"cpu_check: {what}: {' '.join(argv[1:])}", file=sys.stderr, flush=True)
  result = subprocess.run(argv, cwd=benchmark.REPO_ROOT, capture_output=True, text=True,
                          check=False, env=env)
  if result.returncode != 0:
    tail = " | ".join(result.stderr.strip().splitlines()[-6:])
    raise RuntimeError(f"{what} failed with exit status {result.returncode}: {tail}")
  return hf_torch_bench.parse_lines(result.stdout)


def _benchmark_command(config, *args):
  return [sys.executable, BENCHMARK, f"--config={config}", *args]


def _one(lines, what, **match):
  """The line of `lines` whose fields have the values of `match`."""
  found = [l for l in lines if all(l.get(k) == v for k, v in match.items())]
  if not found:
    raise RuntimeError(f"{what} printed no line with {match}")
  return found[0]


def _record(measurements, keys, measure):
  """measurements[key] = measure()[key] for each key, or {"error": ...} for all when it fails."""
  try:
    values = measure()
  except Exception as e:  # noqa: BLE001 -- recorded: see below
    # A measurement that failed fails its bars; the others still run.
    values = {key: {"error": " ".join(str(e).split())} for key in keys}
  measurements.update(values)


def peer_unavailable(peer, python):
  """Why `peer` (PEERS) cannot run under `python`, or None when it can."""
  about = PEERS[peer]
  if not python:
    return (f"no {about.flag} given: {peer}'s bars need an interpreter with {about.needs} "
            f"({about.hint})")
  try:
    hf_torch_bench.check_interpreter(python, about.probe, about.flag, about.needs, about.hint)
  except hf_torch_bench.UsageError as e:
    return str(e)
  return None


def measure_peer(peer, python, config, shape, precisions, steps):
  """The peer's forward and training steps at each of `precisions`:
  {"<peer>_<mode>_<precision>"}, their details the peer's versions and threads."""
  about = PEERS[peer]
  argv = hf_torch_bench.command(
      python, tool=about.tool, config=config, batch_size=shape.batch_size,
      seq_length=shape.seq_length, num_predictions=shape.num_predictions, mode=list(MODES),
      mixed_precision=list(precisions), steps=steps)
  # Peers must not load what they do not need (transformers would load TensorFlow beside torch).
  env = dict(os.environ, USE_TF="0", KERAS_BACKEND="tensorflow")
  lines = _json_lines(argv, f"{peer} forward and train ({os.path.basename(about.tool)})", env)
  out = {}
  for precision in precisions:
    for mode in MODES:
      line = _one(lines, about.tool, mode=mode, mixed_precision=precision)
      out[f"{peer}_{mode}_{precision}"] = {
          "value": line["seconds_per_step"], "unit": "s",
          "details": {f"{peer}_{k}": line[k] for k in about.details if k in line}}
  return out


def measure_ours(config, shape, precision, steps):
  """Our forward and training step under `precision`, tools/benchmark.py's defaults otherwise:
  {"ours_<mode>_<precision>"}, and under float32 "gemm_float32", the GEMM probe's rate."""
  argv = _benchmark_command(
      config, "--mode=forward", "--mode=train", f"--mixed_precision={precision}",
      f"--optimizer={OPTIMIZER}", f"--batch_size={shape.batch_size}",
      f"--seq_length={shape.seq_length}", f"--num_predictions={shape.num_predictions}",
      f"--steps={steps}")
  lines = _json_lines(argv, f"our {precision} forward and train (tools/benchmark.py)")
  out = {}
  for mode in MODES:
    line = _one(lines, "tools/benchmark.py", mode=mode)
    out[f"ours_{mode}_{precision}"] = {
        "value": line["seconds_per_step"], "unit": "s",
        "details": {"jit_compile": line["jit_compile"], "threads": line["threads"]}}
  forward = _one(lines, "tools/benchmark.py", mode="forward")
  if precision == "float32" and str(forward.get("peak_source")).startswith("GEMM probe"):
    out["gemm_float32"] = {"value": forward["peak_tflops"], "unit": "TFLOP/s",
                           "details": {"gemm_probe": forward["peak_source"]}}
  return out


def measure_saved_model(config, precision, shape):
  """The SavedModel of `precision`, tokens signature, p50 ms at --serving_tokens (batch 1 and
  --serving_batch) and --short_tokens (batch 1): {"saved_model_<precision>_<T>x<B>"}."""
  tokens = sorted({shape.short_tokens, shape.serving_tokens})
  argv = _benchmark_command(
      config, "--mode=serving", f"--serving_precision={precision}",
      f"--serving_tokens={','.join(map(str, tokens))}", "--serving_runtimes=saved_model",
      f"--serving_batch_sizes={shape.serving_batch}")
  lines = _json_lines(argv, f"the {precision} SavedModel (tools/benchmark.py --mode=serving)")
  wanted = [(shape.serving_tokens, 1), (shape.serving_tokens, shape.serving_batch),
            (shape.short_tokens, 1)]
  out = {}
  for t, batch in wanted:
    line = _one(lines, "tools/benchmark.py", runtime="saved_model", signature="tokens",
                tokens=t, batch_size=batch)
    out[f"saved_model_{precision}_{t}x{batch}"] = {"value": line["p50_ms"], "unit": "ms"}
  return out


def run_int8(config, runtime, tokens, threads, *extra):
  """One int8 runtime's run of tools/benchmark.py --mode=serving --serving_fidelity at `tokens`,
  batch 1: (its p50 ms, its fidelity line)."""
  argv = _benchmark_command(
      config, "--mode=serving", f"--serving_runtimes={runtime}", f"--serving_tokens={tokens}",
      "--serving_batch_sizes=1", f"--serving_threads={threads}", "--serving_fidelity", *extra)
  lines = _json_lines(argv, f"the {runtime} export (tools/benchmark.py --mode=serving)")
  served = _one(lines, "tools/benchmark.py", runtime=runtime, batch_size=1, tokens=tokens)
  return served["p50_ms"], _one(lines, "tools/benchmark.py", mode="fidelity", runtime=runtime)


def fidelity_report(runtime, model, fidelity):
  """A fidelity line of the check's output: tools/benchmark.py's line (or an error) with the
  model it is of and whether it meets the goal."""
  line = {"fidelity": runtime, "model": model}
  if isinstance(fidelity, str):
    line["error"] = fidelity
  else:
    line.update({k: v for k, v in fidelity.items() if k not in ("mode", "runtime")})
  line["goal"] = f"pooled and sequence cosine >= {FIDELITY_GOAL:g}, no changed argmax"
  line["meets_goal"] = fidelity_meets_goal(line)
  return line


def best_of(each, runtimes, key, what):
  """{key: the fastest of `runtimes` in `each` ({runtime: p50 ms or {"error"}})}; raises
  RuntimeError naming `what` when none of them was timed."""
  timed = {r: each[r] for r in runtimes if not isinstance(each.get(r, {}), dict)}
  if not timed:
    errors_ = "; ".join(f"{r}: {each[r]['error']}" for r in runtimes if r in each)
    raise RuntimeError(f"no {what} could be timed" + (f": {errors_}" if errors_ else ""))
  best = min(timed, key=timed.get)
  return {key: {"value": timed[best], "unit": "ms", "details": {f"{key}_runtime": best}}}


def int8_measurements(each, threads):
  """The int8 bars' measurements from every runtime's p50 ms (or {"error"}): best_int8,
  best_static_int8 and best_dynamic_int8 (of the static ones' formats), each {"error"} where
  none of its runtimes was timed."""
  runtimes = list(each)
  static = [r for r in runtimes if is_static(r)]
  formats = {benchmark.PORTABLE_RUNTIMES[r][1] for r in static}
  dynamic = [r for r in runtimes if not is_static(r)
             and benchmark.PORTABLE_RUNTIMES[r][1] in formats]
  m = {}
  _record(m, ("best_int8",), lambda: best_of(each, runtimes, "best_int8", "int8 export"))
  m["best_int8"].setdefault("details", {}).update(int8_p50_ms=each, int8_threads=threads)
  _record(m, ("best_static_int8",),
          lambda: best_of(each, static, "best_static_int8", "static int8 export"))
  _record(m, ("best_dynamic_int8",),
          lambda: best_of(each, dynamic, "best_dynamic_int8", "dynamic int8 export of "
                          + "/".join(sorted(formats))))
  return m


def measure_int8(config, runtimes, tokens, threads):
  """Each int8 runtime at `tokens`, batch 1, in its own run (one that fails leaves the others):
  (the int8 measurements, the fidelity lines of its random-weight model)."""
  each, fidelity = {}, []
  for runtime in runtimes:
    try:
      each[runtime], line = run_int8(config, runtime, tokens, threads)
    except RuntimeError as e:
      each[runtime] = line = {"error": " ".join(str(e).split())}
    fidelity.append(fidelity_report(runtime, f"random weights of --config={config}",
                                    line.get("error", line)))
  return int8_measurements(each, threads), fidelity


def measure_classifier(checkpoint, config_file, runtimes, tokens, threads, data=None):
  """The fidelity lines of every int8 runtime exported from a fine-tuned classifier, compared on
  `data` (or synthetic ids) at up to `tokens` tokens."""
  extra = [f"--serving_checkpoint={checkpoint}", "--serving_head=classifier",
           "--serving_requests=3"] + ([f"--fidelity_data={data}"] if data else [])
  lines = []
  for runtime in runtimes:
    try:
      _, line = run_int8(config_file, runtime, tokens, threads, *extra)
    except RuntimeError as e:
      line = " ".join(str(e).split())
    lines.append(fidelity_report(runtime, f"classifier {checkpoint}", line))
  return lines


def short_request_matmuls(config, tokens, gemm):
  """{"short_request_matmuls"}: the ms the encoder's matmuls at `tokens`, batch 1, take at the
  GEMM probe's rate (`gemm`: measure_ours's "gemm_float32" measurement, or {"error"})."""
  if "value" not in gemm:
    raise RuntimeError(f"no float32 GEMM rate: {gemm['error']}")
  # The pretraining FLOPs without masked positions, less the sentence-order logits: what the
  # SavedModel's tokens signature computes (the encoder: projection, blocks, pooler).
  flops = (benchmark.pretraining_flops(config, 1, tokens, 0).forward
           - 2 * config.hidden_size * 2)
  return {"short_request_matmuls": {
      "value": round(flops / (gemm["value"] * 1e12) * 1e3, 4), "unit": "ms",
      "details": {"matmul_flops": flops, "gemm_float32_tflops": gemm["value"],
                  **gemm.get("details", {})}}}


Plan = collections.namedtuple("Plan", ["config", "shape", "steps", "threads", "peers", "bf16",
                                       "classifier", "rounds"], defaults=(1,))


def measure(plan):
  """Every measurement the bars need, plan.rounds times over (round after round, so that a
  slower minute of a shared machine falls on every side alike), each value the median of its
  rounds, which its details list as "rounds". A measurement that failed in any round is recorded
  as {"error": ...} (it fails its bars), a peer not run as {"skipped": why}.

  Args:
    plan: a Plan: config (name or path), shape, steps, threads (the int8 runtimes'), peers
      ({peer: its interpreter, or None}), bf16 (whether to measure bf16), classifier (None, or
      (checkpoint, its config file, fidelity data or None)), rounds.

  Returns:
    ({key: {"value", "unit", "details"?} or {"error"} or {"skipped"}}, the first round's
    fidelity lines).
  """
  rounds = [measure_once(plan) for _ in range(plan.rounds)]
  if len(rounds) == 1:
    return rounds[0]
  combined = {}
  for key, first in rounds[0][0].items():
    each = [r[0].get(key, {"error": "not measured in every round"}) for r in rounds]
    failed = next((m for m in each if "value" not in m), None)
    if failed is not None:
      combined[key] = failed
      continue
    values = [m["value"] for m in each]
    combined[key] = dict(first, value=statistics.median(values),
                         details=dict(first.get("details", {}), rounds=values))
  return combined, rounds[0][1]


def measure_once(plan):
  """One round of every measurement the bars need (see measure), each in a process of its own;
  a failed one is recorded as {"error": ...} under its keys, a peer not run as
  {"skipped": why}. Returns what measure does, for this round."""
  precisions = PRECISIONS if plan.bf16 else PRECISIONS[:1]
  m = {}
  for peer, python in plan.peers.items():
    keys = [f"{peer}_{mode}_{p}" for p in precisions for mode in MODES]
    why = peer_unavailable(peer, python)
    if why:
      m.update({key: {"skipped": why} for key in keys})
    else:
      _record(m, keys, lambda p=peer, py=python: measure_peer(p, py, plan.config, plan.shape,
                                                              precisions, plan.steps))
  for precision in precisions:
    _record(m, [f"ours_{mode}_{precision}" for mode in MODES],
            lambda p=precision: measure_ours(plan.config, plan.shape, p, plan.steps))
  gemm = m.get("gemm_float32") or {"error": m["ours_forward_float32"].get(
      "error", "our float32 forward line has no GEMM probe rate")}
  _record(m, ("short_request_matmuls",), lambda: short_request_matmuls(
      benchmark.load_config(plan.config), plan.shape.short_tokens, gemm))
  for precision in ("float32", "bfloat16")[:len(precisions)]:
    s = plan.shape
    _record(m, [f"saved_model_{precision}_{t}x{b}" for t, b in (
        (s.serving_tokens, 1), (s.serving_tokens, s.serving_batch), (s.short_tokens, 1))],
            lambda p=precision: measure_saved_model(plan.config, p, plan.shape))
  int8, fidelity = measure_int8(plan.config, int8_runtimes(), plan.shape.serving_tokens,
                                plan.threads)
  m.update(int8)
  if plan.classifier:
    checkpoint, config_file, data = plan.classifier
    tokens = min(plan.shape.serving_tokens,
                 benchmark.load_config(config_file).max_position_embeddings)
    fidelity += measure_classifier(checkpoint, config_file, int8_runtimes(), tokens,
                                   plan.threads, data)
  return m, fidelity


def run_check(plan, units=None):
  """The check: measures what applies to the CPU, then judges.

  Args:
    plan: a Plan (its bf16 is set here from the CPU).
    units: hardware.matrix_units(), or another CPU's for a dry reading.

  Returns:
    The lines: one per bar (comparisons()), one per fidelity measurement, then the summary.
  """
  units = units or hardware.matrix_units()
  plan = plan._replace(bf16=bool(has_bf16_units(units)))
  measurements, fidelity = measure(plan)
  lines = [comparison_line(c, measurements)
           for c in comparisons(plan.shape, units, hardware.cpu_name())] + fidelity
  peers = {peer: python if "skipped" not in measurements.get(f"{peer}_forward_float32", {})
           else measurements[f"{peer}_forward_float32"]["skipped"]
           for peer, python in plan.peers.items()}
  return lines + [summary_line(lines, units, plan.shape, peers)]


def check_flags(config, shape, classifier_checkpoint, classifier_config):
  """Raises errors.UsageError, naming the flag and the fix, for a --config the check cannot
  build or serve at the shape's lengths, or a classifier without a config.

  Returns:
    The classifier's config file (None without --classifier_checkpoint).
  """
  try:
    loaded = benchmark.load_config(config)
  except (FileNotFoundError, ValueError) as e:
    raise errors.UsageError(f"--config={config}: {e}") from None
  longest = max(shape.serving_tokens, shape.short_tokens, shape.seq_length)
  if loaded.max_position_embeddings < longest:
    raise errors.UsageError(
        f"--config={config}: max_position_embeddings is {loaded.max_position_embeddings}, under "
        f"the {longest} tokens the bars are at; use a config with more positions, or shorter "
        "--serving_tokens/--short_tokens/--seq_length")
  if shape.num_predictions > shape.seq_length:
    raise errors.UsageError(f"--num_predictions={shape.num_predictions}: more than "
                            f"--seq_length={shape.seq_length} tokens")
  if not classifier_checkpoint:
    return None
  config_file = classifier_config or os.path.join(os.path.dirname(classifier_checkpoint),
                                                  "albert_config.json")
  if not os.path.isfile(config_file):
    raise errors.UsageError(f"--classifier_config={config_file}: no such file; give the "
                            "classifier's albert_config.json")
  return os.path.abspath(config_file)


def _absolute(path):
  """`path` made absolute where it is a file here (the children run in the repository's root)."""
  return os.path.abspath(path) if path and os.path.exists(path) else path


def main(argv):
  if len(argv) > 1:
    raise errors.UsageError(f"unexpected arguments {argv[1:]}: every setting is a --flag")
  shape = Shape(FLAGS.batch_size, FLAGS.seq_length, FLAGS.num_predictions,
                FLAGS.serving_tokens, FLAGS.serving_batch, FLAGS.short_tokens)
  classifier_config = check_flags(FLAGS.config, shape, FLAGS.classifier_checkpoint,
                                  FLAGS.classifier_config)
  classifier = (None if classifier_config is None else
                (os.path.abspath(FLAGS.classifier_checkpoint), classifier_config,
                 _absolute(FLAGS.fidelity_data)))
  plan = Plan(_absolute(FLAGS.config), shape, FLAGS.steps,
              FLAGS.serving_threads or os.cpu_count(),
              {"hf_torch": FLAGS.hf_python, "keras_hub": FLAGS.kerashub_python}, None,
              classifier, FLAGS.rounds)
  print(f"cpu_check: {hardware.describe()}", file=sys.stderr, flush=True)
  lines = run_check(plan)
  for line in lines:
    print(json.dumps(line), flush=True)
  if FLAGS.output_json:
    albert_io.write_text_atomically(FLAGS.output_json, json.dumps(lines, indent=1) + "\n")
  return lines[-1]["exit_status"]


if __name__ == "__main__":
  define_flags()
  cli.run(main)
