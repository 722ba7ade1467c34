"""The CPU check, on any x86 CPU, in one run: ours against the peers (HF torch, keras-hub) at
float32 and, where the CPU has bf16 units, at bf16; our fastest serving runtime of each precision
against HF's (torch, ONNX Runtime); the SavedModels and the int8 exports against the model's own
matmul chain, measured in the same run; static int8 against dynamic; the bf16 short request
against the float32 one; and each int8 runtime's fidelity to float32.

  python3 tools/cpu_check.py --hf_python=/tmp/hfvenv/bin/python --kerashub_python=python3 \\
      --output_json=cpu_check.json

It installs nothing. Each peer runs in the interpreter its flag names: --hf_python one with torch
and transformers, and for the serving bars onnxruntime and onnx (tools/hf_torch_bench.py:
python3 -m venv /tmp/hfvenv && /tmp/hfvenv/bin/pip install torch transformers numpy onnxruntime
onnx), --kerashub_python one with keras-hub (tools/kerashub_bench.py;
albert_tf's own interpreter where keras-hub is installed). A peer whose flag is not given, or
whose interpreter cannot import its packages, has its bars reported `skipped` with why.

The shape: --config (ALBERT-base), --batch_size x --seq_length (8 x 128), --num_predictions (20)
for the forward and training steps (both sides: random weights, the same config; ours with
tools/benchmark.py's defaults and --optimizer=adamw, as the peers' steps); the SavedModels'
tokens signature at --serving_tokens (128), batch 1 and --serving_batch (8), and at
--short_tokens (8), batch 1; the int8 exports at --short_tokens and --serving_tokens, batch 1,
--serving_threads threads (default: every CPU thread, as the SavedModel's TensorFlow).

Serving against what a user would pick instead: HF's ALBERT in tools/hf_torch_bench.py
--mode=serving (under --hf_python, --serving_threads threads): torch eager float32, torch bf16
autocast (where the CPU has bf16 units), torch dynamic int8, its ONNX export in ONNX Runtime
float32 and dynamic int8. Ours: float32, the fastest of the float32 SavedModel and our float32
LiteRT and ONNX exports (tools/benchmark.py's tflite and onnx, --serving_threads threads); bf16,
the bfloat16 SavedModel; int8,
the fastest int8 export. Each side's figure is its fastest runtime of that precision (rounds: the
fastest of each runtime's median), at --short_tokens and --serving_tokens, batch 1; a runtime
that failed is named in the bar's details and the rest still compete, and a side none of whose
runtimes ran fails the bar (HF's ONNX runtimes need onnxruntime and onnx under --hf_python).

The chain (tools/matmul_chain.py) is the encoder's GEMMs of one request alone, at the request's
shapes, nothing else: the least that request can take in that runtime on this CPU. It is timed at
the SavedModels' shapes in TensorFlow (float32, and bfloat16 where the CPU has bf16 units; every
CPU thread, as the SavedModel), and at --short_tokens and --serving_tokens, batch 1 in ONNX
Runtime, dynamic int8 and float32 (--serving_threads threads). The chain bars' limits are its
figures, measured on the same machine in the same run, not multipliers per instruction set: the
float32 SavedModel may take at most 1.5x its chain, our fastest float32 runtime 1.5x the faster
float32 chain, and a faster precision must reach 0.8 of the speed-up the chain gets from it.
Which bars apply is decided from albert_tf.core.hardware (the CPU's flags):

  float32_{forward,train}_vs_{hf_torch,keras_hub}  ours / the peer's seconds per step <= 0.9
                                    (<= 0.9x each peer is <= 0.9x the faster one)
  bf16_{forward,train}_vs_{...}     the same under mixed_bfloat16 (HF: torch autocast bf16),
                                    where the CPU has bf16 units (AMX-BF16 or AVX512-BF16)
  float32_saved_model_<T>x1_vs_chain  the float32 SavedModel's p50 / its float32 chain's <= 1.5,
                                    at --short_tokens and --serving_tokens (T), batch 1
  best_float32_<T>x1_vs_chains      our fastest float32 runtime's p50 (SavedModel, TFLite, ONNX)
                                    / the faster float32 chain's (TensorFlow, ONNX Runtime)
                                    <= 1.5, at the same lengths, batch 1
  bf16_saved_model_<T>x<B>_vs_chain  the bfloat16 SavedModel's speed-up over the float32 one
                                    (float32 p50 / bfloat16 p50) / the chain's (its float32 p50 /
                                    its bfloat16 p50) >= 0.8, batch 1 and B, where the CPU has
                                    bf16 units
  best_int8_<T>x1_vs_chain          the fastest int8 export's speed-up over the float32
                                    SavedModel / the chain's int8 speed-up over its float32
                                    >= 0.8, on an x86 CPU with AVX2
  static_int8_vs_dynamic_<T>x1      the fastest static int8 export's p50 / the fastest dynamic
                                    one's of the same format (ONNX) <= 1, with VNNI or AMX-INT8
  short_request_bf16_vs_float32     the bfloat16 SavedModel's p50 at --short_tokens, batch 1 /
                                    the float32 one's <= 1, where the CPU has bf16 units
  serving_{float32,bf16,int8}_<T>x1_vs_peers  our fastest runtime's p50 at that precision / HF's
                                    fastest's <= 0.9, at --short_tokens and --serving_tokens (T),
                                    batch 1 (bf16: where the CPU has bf16 units); details name
                                    each side's fastest runtime and every runtime's p50

A speed-up bar's ours and theirs are the two speed-ups, its details the four p50s behind them.
A bar that does not apply to the CPU (or whose peer is missing) has passed null and `skipped`
saying why; a measurement that failed fails its bars, with `error`.

Int8 fidelity (reported, not a bar): each int8 file timed is of one
random-weight model, whose float32 outputs on the same ids are the reference
(tools/benchmark.py --serving_fidelity, on rows of the longer of --serving_tokens and
--short_tokens, the run's longest): one line per runtime with pooled_cosine and
sequence_cosine (the lowest over rows, and over real tokens) and meets_goal (both >= 0.999).
With --classifier_checkpoint (a fine-tuned classifier, its albert_config.json
--classifier_config), every int8 runtime is also exported from it and compared on --fidelity_data
(a TFRecord of its features; default synthetic ids): the same cosines, and argmax_agreement and
argmax_changed of its predicted classes (the goal: none changed).

Each measurement is a program run in a process of its own (tools/benchmark.py,
tools/matmul_chain.py, tools/hf_torch_bench.py, tools/kerashub_bench.py), its JSON lines read
back: our figures are taken under the benchmark's own flag defaults, and no measurement inherits
another's threads, memory or Keras policy. --rounds=N takes every measurement N times, round
after round, and each bar reads the medians (a shared machine's peers moved by up to 20% between
single runs).

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
MATMUL_CHAIN = os.path.join(benchmark.REPO_ROOT, "tools", "matmul_chain.py")
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

# The bars' thresholds: against the peers' steps; the float32 SavedModel's time over its matmul
# chain's (the rest of a request: gathers, softmax, LayerNorm, GELU, the runtime's own work); a
# faster precision's speed-up over float32 as a share of the chain's.
STEP_BAR = 0.9
# Our fastest serving runtime against the peer's fastest of the same precision: the steps' 0.9.
SERVING_PEER_BAR = STEP_BAR
# The precisions of the serving bars against the peers (the lines' names: bfloat16 is bf16).
SERVING_PRECISIONS = {"float32": "float32", "bfloat16": "bf16", "int8": "int8"}
# Our float32 portable exports (tools/benchmark.py's PORTABLE_RUNTIMES) that compete with the
# float32 SavedModel there: a user serving float32 could pick either.
FLOAT32_PORTABLE = ("tflite", "onnx")
CHAIN_BAR = 1.5
# The float32 chains, (runtime, tools/matmul_chain.py's precision): a float32 request's least
# time is the faster of the two.
FLOAT32_CHAINS = (("tensorflow", "float32"), ("onnxruntime", "onnx_float32"))
SPEEDUP_SHARE_BAR = 0.8
# The int8 fidelity goal: pooled and sequence cosine against float32, and no changed argmax.
FIDELITY_GOAL = 0.999

Shape = collections.namedtuple("Shape", ["batch_size", "seq_length", "num_predictions",
                                         "serving_tokens", "serving_batch", "short_tokens"])
BASE_SHAPE = Shape(8, 128, 20, 128, 8, 8)
Bar = collections.namedtuple("Bar", ["op", "threshold"])
# A bar's side: a measurement's key, or Speedup(slower, faster), the speed-up of one measurement
# over another (slower's value / faster's: float32 p50 / bfloat16 p50).
Speedup = collections.namedtuple("Speedup", ["slower", "faster"])
# A bar's side: the fastest of several runtimes' measurements, members ((runtime, key), ...);
# label names the side in the line's details (ours, hf_torch).
Best = collections.namedtuple("Best", ["label", "members"])
# ratio "time": ours / theirs (lower is better); "speedup": theirs / ours; "share": ours / theirs
# of two speed-ups (higher is better). bar None when the CPU lacks the units the bar is for;
# `skipped` then says why.
Comparison = collections.namedtuple(
    "Comparison", ["name", "ours", "theirs", "ratio", "bar", "skipped", "ours_is", "theirs_is"])
RATIO_OF = {"time": "ours / theirs (time: lower is faster)",
            "speedup": "theirs / ours (speed-up: higher is faster)",
            "share": "ours / theirs (speed-ups: the share of the chain's that ours reaches, "
                     "higher is faster)"}


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
                       "The portable exports' runtime threads (LiteRT, ONNX Runtime), and HF's "
                       "serving runtimes'. Default: every CPU thread, as many as the "
                       "SavedModel's TensorFlow uses.", lower_bound=1)
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


def chain_keys(precisions, token_counts, batch_sizes):
  """The measurements' keys of the matmul chain: chain_<precision>_<T>x<B>, each combination."""
  return [f"chain_{p}_{t}x{b}" for p in precisions for t in token_counts for b in batch_sizes]


def portable_key(runtime, tokens):
  """The measurement's key of our portable export `runtime` at `tokens`, batch 1."""
  return f"portable_{runtime}_{tokens}x1"


def peer_serving_key(runtime, tokens):
  """The measurement's key of HF's serving `runtime` (hf_torch_bench.SERVING_RUNTIMES) at
  `tokens`, batch 1."""
  return f"hf_torch_serving_{runtime}_{tokens}x1"


def peer_serving_runtimes(precisions):
  """HF's serving runtimes (hf_torch_bench.SERVING_RUNTIMES' names) of `precisions`."""
  return [name for name, (_, precision) in hf_torch_bench.SERVING_RUNTIMES.items()
          if precision in precisions]


def serving_members(side, precision, tokens):
  """The runtimes one side of a serving bar against the peers picks its fastest from.

  Args:
    side: "ours" or "hf_torch".
    precision: "float32", "bfloat16" or "int8".
    tokens: the request's length (batch 1).

  Returns:
    ((runtime, its measurement's key), ...): ours the SavedModel of that precision (none for
    int8) and our portable exports of it; HF's, its serving runtimes of it.
  """
  if side != "ours":
    return tuple((name, peer_serving_key(name, tokens))
                 for name in peer_serving_runtimes([precision]))
  portable = {"float32": FLOAT32_PORTABLE, "bfloat16": (), "int8": int8_runtimes()}[precision]
  saved_model = (() if precision == "int8" else
                 (("saved_model", f"saved_model_{precision}_{tokens}x1"),))
  return saved_model + tuple((r, portable_key(r, tokens)) for r in portable)


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
            f"{about.model} {precision} {mode} step, seconds"))
  served = lambda precision, tokens, batch: (
      f"{precision} SavedModel, tokens signature, {tokens} tokens, batch {batch}, p50 ms")
  chain = lambda runtime, tokens, batch: (
      f"its matmul chain in {runtime}, {tokens} tokens, batch {batch} (tools/matmul_chain.py)")
  for tokens in sorted({short, t}):
    out.append(Comparison(
        f"float32_saved_model_{tokens}x1_vs_chain", f"saved_model_float32_{tokens}x1",
        f"chain_float32_{tokens}x1", "time", Bar("<=", CHAIN_BAR), None,
        served("float32", tokens, 1), chain("TensorFlow float32", tokens, 1) + ", p50 ms"))
  # Whatever runtime serves it: the float32 chain in TensorFlow is bound by its cost per op at
  # short lengths, where ONNX Runtime's float32 GEMMs go about twice as fast.
  for tokens in sorted({short, t}):
    ours = serving_members("ours", "float32", tokens)
    out.append(Comparison(
        f"best_float32_{tokens}x1_vs_chains", Best("ours", ours),
        Best("chain", tuple((runtime, f"chain_{precision}_{tokens}x1")
                            for runtime, precision in FLOAT32_CHAINS)),
        "time", Bar("<=", CHAIN_BAR), None,
        f"our fastest float32 runtime of {', '.join(r for r, _ in ours)}, {tokens} tokens, "
        "batch 1, p50 ms",
        f"the faster of the float32 matmul chains in {' and '.join(dict(FLOAT32_CHAINS))}, "
        f"{tokens} "
        "tokens, batch 1, p50 ms (tools/matmul_chain.py)"))
  for batch in sorted({1, b}):
    out.append(Comparison(
        f"bf16_saved_model_{t}x{batch}_vs_chain",
        Speedup(f"saved_model_float32_{t}x{batch}", f"saved_model_bfloat16_{t}x{batch}"),
        Speedup(f"chain_float32_{t}x{batch}", f"chain_bfloat16_{t}x{batch}"), "share",
        None if no_bf16 else Bar(">=", SPEEDUP_SHARE_BAR), no_bf16,
        f"the bfloat16 SavedModel's speed-up over the float32 one, {t} tokens, batch {batch} "
        "(float32 p50 / bfloat16 p50)",
        "the speed-up of " + chain("TensorFlow bfloat16", t, batch) + " over float32"))
  no_avx2 = (None if units["avx2"] else
             f"no AVX2 on {cpu}: the int8 bar is for x86 CPUs with AVX2 or more")
  out.append(Comparison(
      f"best_int8_{t}x1_vs_chain", Speedup(f"saved_model_float32_{t}x1", "best_int8"),
      Speedup(f"chain_float32_{t}x1", f"chain_int8_{t}x1"), "share",
      None if no_avx2 else Bar(">=", SPEEDUP_SHARE_BAR), no_avx2,
      f"the fastest int8 export's speed-up over the float32 SavedModel, {t} tokens, batch 1 "
      "(float32 p50 / int8 p50)",
      "the speed-up of " + chain("ONNX Runtime dynamic int8", t, 1) + " over its float32 in "
      "TensorFlow"))
  out.append(Comparison(
      f"static_int8_vs_dynamic_{t}x1", "best_static_int8", "best_dynamic_int8", "time",
      Bar("<=", 1.0) if has_vnni(units) else None,
      None if has_vnni(units) else (f"no VNNI or AMX-INT8 on {cpu}: static int8 need not beat "
                                    "dynamic without int8 dot products"),
      f"the fastest static int8 export, {t} tokens, batch 1, p50 ms",
      f"the fastest dynamic int8 export of the same format, {t} tokens, batch 1, p50 ms"))
  out.append(Comparison(
      "short_request_bf16_vs_float32", f"saved_model_bfloat16_{short}x1",
      f"saved_model_float32_{short}x1", "time", None if no_bf16 else Bar("<=", 1.0), no_bf16,
      served("bfloat16", short, 1), served("float32", short, 1)))
  for precision, label in SERVING_PRECISIONS.items():
    skipped = no_bf16 if precision == "bfloat16" else None
    for tokens in sorted({short, t}):
      ours, theirs = (serving_members(side, precision, tokens) for side in ("ours", "hf_torch"))
      out.append(Comparison(
          f"serving_{label}_{tokens}x1_vs_peers", Best("ours", ours), Best("hf_torch", theirs),
          "time", None if skipped else Bar("<=", SERVING_PEER_BAR), skipped,
          f"our fastest {precision} runtime of {', '.join(r for r, _ in ours)}, {tokens} "
          "tokens, batch 1, p50 ms (tools/benchmark.py --mode=serving)",
          f"HF ALBERT's fastest {precision} runtime of {', '.join(r for r, _ in theirs)}, "
          f"{tokens} tokens, batch 1, p50 ms (tools/hf_torch_bench.py --mode=serving)"))
  return out


# -- the verdicts ----------------------------------------------------------------------------------
def holds(bar, ratio):
  """Whether `ratio` meets `bar` (a Bar)."""
  return ratio <= bar.threshold if bar.op == "<=" else ratio >= bar.threshold


def resolved(side, measurements):
  """The measurement a bar's side names.

  Args:
    side: a measurement's key, a Speedup of two, or a Best of several.
    measurements: as comparison_line's.

  Returns:
    {"value", "unit", "details"?}; {"error"} naming the key that failed (or measured nothing a
    ratio can divide by); {"skipped"}; or None when not measured. A Speedup's value is
    slower / faster (unit "x"), its details each measurement's value, unit and details under
    its key. A Best's is best_of_runtimes'.
  """
  if isinstance(side, Best):
    return best_of_runtimes(side, measurements)
  if isinstance(side, Speedup):
    parts = [resolved(key, measurements) for key in side]
    skipped = next((m for m in parts if m is not None and "skipped" in m), None)
    failed = [m["error"] for m in parts if m is not None and "error" in m]
    if skipped or failed or None in parts:
      return skipped or ({"error": "; ".join(failed)} if failed else None)
    slower, faster = parts
    return {"value": round(slower["value"] / faster["value"], 4), "unit": "x",
            "details": {key: {"value": m["value"], "unit": m["unit"], **m.get("details", {})}
                        for key, m in zip(side, parts)}}
  m = measurements.get(side)
  if m is not None and "error" in m:
    return {"error": f"{side}: {m['error']}"}
  if m is not None and "value" in m and m["value"] <= 0:
    # A p50 rounded to 0.00 ms: shorter than the lines' precision, no ratio to take.
    return {"error": f"{side}: {m['value']} {m['unit']}, too short to compare at this shape"}
  return m


def best_of_runtimes(best, measurements):
  """The fastest runtime of a Best side.

  Args:
    best: a Best.
    measurements: as comparison_line's.

  Returns:
    {"value": the fastest runtime's value, "unit", "details": {<label>_best: that runtime,
    <label>_p50_ms: {runtime: value} of every runtime that ran, and <label>_failed /
    <label>_skipped: {runtime: why} of those that did not}}, where one ran; else {"error"}
    naming every runtime's failure where one failed (or was not measured), {"skipped"} where
    all were skipped, None where none was measured.
  """
  ran, failed, skipped, missing = {}, {}, {}, {}
  unit = None
  for runtime, key in best.members:
    m = resolved(key, measurements)
    if m is None:
      missing[runtime] = f"{key}: not measured"
    elif "value" in m:
      ran[runtime], unit = m["value"], m["unit"]
    elif "skipped" in m:
      skipped[runtime] = m["skipped"]
    else:
      failed[runtime] = m["error"]
  if not ran:
    if failed:
      # Each error names its measurement's key, and so its runtime.
      return {"error": f"{best.label}: none of its runtimes ran: "
                       + "; ".join({**failed, **missing}.values())}
    return {"skipped": next(iter(skipped.values()))} if skipped else None
  failed.update(missing)
  fastest = min(ran, key=ran.get)
  details = {f"{best.label}_best": fastest, f"{best.label}_p50_ms": ran}
  for name, why in (("failed", failed), ("skipped", skipped)):
    if why:
      details[f"{best.label}_{name}"] = why
  return {"value": ran[fastest], "unit": unit, "details": details}


def comparison_line(comparison, measurements):
  """One bar's line.

  Args:
    comparison: a Comparison.
    measurements: {key: {"value": float, "unit": str, "details"?: {...}}, or {"error": str}, or
      {"skipped": str} (a peer not run)}; keys absent when not measured.

  Returns:
    {comparison, ours, theirs, unit, ratio, ratio_of, bar, passed, ours_is, theirs_is}, with
    `skipped` when the bar does not apply (passed null, whatever was measured), `error` when a
    measurement failed (passed false), and `details`, the fields the measurements add (a
    speed-up's: the two measurements it is of).
  """
  c = comparison
  ours, theirs = resolved(c.ours, measurements), resolved(c.theirs, measurements)
  line = {"comparison": c.name, "ours": None, "theirs": None, "unit": None, "ratio": None,
          "ratio_of": RATIO_OF[c.ratio],
          "bar": f"{c.bar.op} {c.bar.threshold:g}" if c.bar else None,
          "passed": None, "ours_is": c.ours_is, "theirs_is": c.theirs_is}
  have = [m for m in (ours, theirs) if m is not None and "value" in m]
  if len(have) == 2:
    line.update(ours=ours["value"], theirs=theirs["value"], unit=ours["unit"])
    ratio = (theirs["value"] / ours["value"] if c.ratio == "speedup"
             else ours["value"] / theirs["value"])
    line["ratio"] = round(ratio, 4)
  details = {k: v for m in (ours, theirs) if m for k, v in m.get("details", {}).items()}
  if details:
    line["details"] = details
  skipped = c.skipped or next((m["skipped"] for m in (ours, theirs) if m and "skipped" in m),
                              None)
  failures = [m["error"] for m in (ours, theirs) if m is not None and "error" in m]
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
  """The last line: the CPU and its units, the verdict (passed null when every bar was skipped),
  and the fidelity lines below the goal.

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
          "bf16_units": bool(has_bf16_units(units)),
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


def _peer_env():
  # Peers must not load what they do not need (transformers would load TensorFlow beside torch).
  return dict(os.environ, USE_TF="0", KERAS_BACKEND="tensorflow")


def measure_peer_serving(python, config, token_counts, threads, runtimes):
  """HF's serving runtimes (tools/hf_torch_bench.py --mode=serving, under `python`) at each of
  `token_counts`, batch 1, in one run.

  Args:
    python: --hf_python.
    config: --config.
    token_counts: the requests' lengths.
    threads: the runtimes' intra-op threads (--serving_threads).
    runtimes: names of hf_torch_bench.SERVING_RUNTIMES.

  Returns:
    {"hf_torch_serving_<runtime>_<T>x1": p50 ms, or {"error"} / {"skipped"} as its line has
    it (a runtime that cannot run here; onnxruntime missing), {"error"} where it printed none}.
  """
  argv = hf_torch_bench.serving_command(python, token_counts, batch_size=1, threads=threads,
                                        config=config, runtimes=runtimes)
  lines = _json_lines(argv, "hf_torch serving (hf_torch_bench.py --mode=serving)", _peer_env())
  results = hf_torch_bench.serving_results(lines)
  out = {}
  for name in runtimes:
    runtime, precision = hf_torch_bench.SERVING_RUNTIMES[name]
    for tokens in token_counts:
      line = results.get((runtime, precision, tokens, 1))
      if line is None:
        out[peer_serving_key(name, tokens)] = {
            "error": f"tools/hf_torch_bench.py printed no {name} line at {tokens} tokens"}
      elif "p50_ms" in line:
        out[peer_serving_key(name, tokens)] = {"value": line["p50_ms"], "unit": "ms"}
      else:
        out[peer_serving_key(name, tokens)] = {
            k: line[k] for k in ("skipped", "error") if k in line} or {
                "error": f"tools/hf_torch_bench.py's {name} line has no p50_ms"}
  return out


def measure_peer(peer, python, config, shape, precisions, steps):
  """The peer's forward and training steps at each of `precisions`:
  {"<peer>_<mode>_<precision>"}, their details the peer's versions and threads."""
  about = PEERS[peer]
  argv = hf_torch_bench.command(
      python, tool=about.tool, config=config, batch_size=shape.batch_size,
      seq_length=shape.seq_length, num_predictions=shape.num_predictions, mode=list(MODES),
      mixed_precision=list(precisions), steps=steps)
  lines = _json_lines(argv, f"{peer} forward and train ({os.path.basename(about.tool)})",
                      _peer_env())
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
  {"ours_<mode>_<precision>"}."""
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


def run_portable(config, runtime, token_counts, threads, *extra, fidelity=True):
  """One portable runtime's run of tools/benchmark.py --mode=serving at each of `token_counts`,
  batch 1, with --serving_fidelity unless `fidelity` is False.

  Args:
    config: --config.
    runtime: a name of PORTABLE_RUNTIMES.
    token_counts: the requests' lengths (the fidelity rows are of the longest).
    threads: its runtime's threads.
    *extra: more flags of tools/benchmark.py.
    fidelity: whether to compare its outputs with the float32 model's.

  Returns:
    ({tokens: its p50 ms}, its fidelity line, or None without `fidelity`).
  """
  argv = _benchmark_command(
      config, "--mode=serving", f"--serving_runtimes={runtime}",
      f"--serving_tokens={','.join(map(str, token_counts))}", "--serving_batch_sizes=1",
      f"--serving_threads={threads}", *(["--serving_fidelity"] if fidelity else []), *extra)
  lines = _json_lines(argv, f"the {runtime} export (tools/benchmark.py --mode=serving)")
  p50s = {t: _one(lines, "tools/benchmark.py", runtime=runtime, batch_size=1, tokens=t)["p50_ms"]
          for t in token_counts}
  return p50s, (_one(lines, "tools/benchmark.py", mode="fidelity", runtime=runtime)
                if fidelity else None)


def measure_portable(config, runtimes, token_counts, threads, fidelity=False):
  """Each of `runtimes` at each of `token_counts`, batch 1, in its own run (one that fails
  leaves the others).

  Args:
    config, token_counts, threads, fidelity: as run_portable's.
    runtimes: names of PORTABLE_RUNTIMES.

  Returns:
    ({"portable_<runtime>_<T>x1": its p50 ms, or {"error"}}, {runtime: its fidelity line, or
    {"error"}}: empty without `fidelity`).
  """
  out, fidelity_lines = {}, {}
  for runtime in runtimes:
    try:
      p50s, line = run_portable(config, runtime, token_counts, threads, fidelity=fidelity)
    except RuntimeError as e:
      line = {"error": " ".join(str(e).split())}
      p50s = dict.fromkeys(token_counts, line)
    out.update({portable_key(runtime, t): p50 if isinstance(p50, dict) else
                {"value": p50, "unit": "ms"} for t, p50 in p50s.items()})
    if fidelity:
      fidelity_lines[runtime] = line
  return out, fidelity_lines


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


def measure_int8(config, runtimes, tokens, threads, also=()):
  """Each int8 runtime at `tokens` (and `also`), batch 1, in its own run (one that fails leaves
  the others).

  Args:
    config: --config.
    runtimes: names of PORTABLE_RUNTIMES.
    tokens: the int8 bars' request length (--serving_tokens).
    threads: the runtimes' threads.
    also: more request lengths timed in the same runs (for the bars against the peers): an
      extra length costs its timed requests, where a run of its own would export again.

  Returns:
    (the int8 measurements at `tokens` and every runtime's "portable_<runtime>_<T>x1" at each
    length, the fidelity lines of its random-weight model).
  """
  each, fidelity_lines = measure_portable(config, runtimes, sorted({tokens, *also}), threads,
                                          fidelity=True)
  at_tokens = {r: each[portable_key(r, tokens)] for r in runtimes}
  p50s = {r: m.get("value", m) for r, m in at_tokens.items()}  # int8_measurements' form
  fidelity = [fidelity_report(r, f"random weights of --config={config}",
                              fidelity_lines[r].get("error", fidelity_lines[r]))
              for r in runtimes]
  return {**int8_measurements(p50s, threads), **each}, fidelity


def measure_classifier(checkpoint, config_file, runtimes, tokens, threads, data=None):
  """The fidelity lines of every int8 runtime exported from a fine-tuned classifier, compared on
  `data` (or synthetic ids) at up to `tokens` tokens."""
  extra = [f"--serving_checkpoint={checkpoint}", "--serving_head=classifier",
           "--serving_requests=3"] + ([f"--fidelity_data={data}"] if data else [])
  lines = []
  for runtime in runtimes:
    try:
      _, line = run_portable(config_file, runtime, [tokens], threads, *extra)
    except RuntimeError as e:
      line = " ".join(str(e).split())
    lines.append(fidelity_report(runtime, f"classifier {checkpoint}", line))
  return lines


def measure_chain(config, precisions, token_counts, batch_sizes, threads=None):
  """The model's matmul chain (tools/matmul_chain.py), in a process of its own.

  Args:
    config: --config.
    precisions, token_counts, batch_sizes: what to time, each combination.
    threads: its --threads, or None for TensorFlow's own (every CPU thread, as the SavedModel).

  Returns:
    {"chain_<precision>_<T>x<B>": its p50 ms, or {"error"} where its line has one (int8
    without the portable extra)}.
  """
  argv = [sys.executable, MATMUL_CHAIN, f"--config={config}",
          f"--precisions={','.join(precisions)}",
          f"--tokens={','.join(map(str, token_counts))}",
          f"--batch_size={','.join(map(str, batch_sizes))}"]
  argv += [f"--threads={threads}"] if threads else []
  lines = _json_lines(argv, f"the {'/'.join(precisions)} matmul chain (tools/matmul_chain.py)")
  out = {}
  for precision in precisions:
    for t in token_counts:
      for batch in batch_sizes:
        line = _one(lines, "tools/matmul_chain.py", precision=precision, tokens=t,
                    batch_size=batch)
        out[f"chain_{precision}_{t}x{batch}"] = (
            {"error": line["error"]} if "error" in line else
            {"value": line["p50_ms"], "unit": "ms",
             "details": {"chain_threads": line["threads"], "chain_flops": line["flops"]}})
  return out


Plan = collections.namedtuple("Plan", ["config", "shape", "steps", "threads", "peers", "bf16",
                                       "classifier", "rounds"], defaults=(1,))


def measure(plan):
  """Every measurement the bars need, plan.rounds times over (round after round, so that a
  slower minute of a shared machine falls on every side alike), each value the median of its
  rounds, which its details list as "<key>_rounds" (by key: a bar's line gathers both sides'
  details into one). A measurement that failed in any round is recorded
  as {"error": ...} (it fails its bars), a peer not run as {"skipped": why}.

  Args:
    plan: a Plan: config (name or path), shape, steps, threads (the portable exports', HF's
      serving runtimes' and the int8 chain's), peers ({peer: its interpreter, or None}), bf16
      (whether to measure bf16), classifier (None, or (checkpoint, its config file, fidelity
      data or None)), rounds.

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
                         details=dict(first.get("details", {}), **{f"{key}_rounds": values}))
  return combined, rounds[0][1]


def measure_once(plan):
  """One round of every measurement the bars need (see measure), each in a process of its own;
  a failed one is recorded as {"error": ...} under its keys, a peer not run as
  {"skipped": why}. Returns what measure does, for this round."""
  precisions = PRECISIONS if plan.bf16 else PRECISIONS[:1]
  m = {}
  unavailable = {}
  for peer, python in plan.peers.items():
    keys = [f"{peer}_{mode}_{p}" for p in precisions for mode in MODES]
    why = unavailable[peer] = peer_unavailable(peer, python)
    if why:
      m.update({key: {"skipped": why} for key in keys})
    else:
      _record(m, keys, lambda p=peer, py=python: measure_peer(p, py, plan.config, plan.shape,
                                                              precisions, plan.steps))
  for precision in precisions:
    _record(m, [f"ours_{mode}_{precision}" for mode in MODES],
            lambda p=precision: measure_ours(plan.config, plan.shape, p, plan.steps))
  s = plan.shape
  for precision in ("float32", "bfloat16")[:len(precisions)]:
    _record(m, [f"saved_model_{precision}_{t}x{b}" for t, b in (
        (s.serving_tokens, 1), (s.serving_tokens, s.serving_batch), (s.short_tokens, 1))],
            lambda p=precision: measure_saved_model(plan.config, p, plan.shape))
  # The chain at the SavedModels' shapes in TensorFlow (batch --serving_batch for the bf16 bar
  # only), and at the int8 exports' in ONNX Runtime, with their threads.
  chain_precisions = ["float32", "bfloat16"][:len(precisions)]
  serving_tokens = sorted({s.short_tokens, s.serving_tokens})
  chain_tokens = serving_tokens
  chain_batches = sorted({1, s.serving_batch}) if plan.bf16 else [1]
  _record(m, chain_keys(chain_precisions, chain_tokens, chain_batches),
          lambda: measure_chain(plan.config, chain_precisions, chain_tokens, chain_batches))
  # ONNX Runtime's chains, int8 and float32, with the portable exports' threads: int8 for the
  # int8 bar's length, float32 at both lengths (the int8 chain at the short one comes along).
  onnx_chains = ["int8", "onnx_float32"]
  _record(m, chain_keys(onnx_chains, serving_tokens, [1]),
          lambda: measure_chain(plan.config, onnx_chains, serving_tokens, [1], plan.threads))
  int8, fidelity = measure_int8(plan.config, int8_runtimes(), s.serving_tokens, plan.threads,
                                also=serving_tokens)
  m.update(int8)
  # Our float32 portable exports (the best float32 runtime against the chains, and against the
  # peers), and the serving bars against the peers: HF's runtimes of the precisions measured
  # here (the SavedModels and int8 exports are measured above).
  m.update(measure_portable(plan.config, FLOAT32_PORTABLE, serving_tokens, plan.threads)[0])
  runtimes = peer_serving_runtimes(["float32", "int8"] + (["bfloat16"] if plan.bf16 else []))
  keys = [peer_serving_key(r, t) for r in runtimes for t in serving_tokens]
  why = (unavailable["hf_torch"] if "hf_torch" in plan.peers
         else peer_unavailable("hf_torch", None))
  if why:
    m.update({key: {"skipped": why} for key in keys})
  else:
    _record(m, keys, lambda: measure_peer_serving(plan.peers["hf_torch"], plan.config,
                                                  serving_tokens, plan.threads, runtimes))
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
