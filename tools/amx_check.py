"""Issue 32's acceptance in one run: on a CPU with AMX, our bf16 against HF torch's bf16, the bf16
SavedModel against the float32 one, and the best int8 export against the float32 SavedModel.

  python3 tools/amx_check.py --hf_python=/tmp/hfvenv/bin/python --output_json=amx_check.json

The HF side runs in an interpreter with torch and transformers (not albert_tf's dependencies):
  python3 -m venv /tmp/hfvenv && /tmp/hfvenv/bin/pip install torch transformers numpy

The bars (ratios of seconds per step or of p50 milliseconds per request):

  bf16_forward_vs_hf_torch      our mixed_bfloat16 forward / HF torch's autocast bf16 forward
                                <= 0.9  (AlbertForPreTraining of the same config, random weights,
                                batch 8, seq 128, 20 masked positions; tools/hf_torch_bench.py)
  bf16_train_vs_hf_torch        the same for a training step (forward, loss, backward, clipping,
                                AdamW: ours --optimizer=adamw, as HF's) <= 0.9
  bf16_saved_model_batch_1      float32 SavedModel / bf16 SavedModel (--serving_precision), the
  bf16_saved_model_batch_8      tokens signature at 128 tokens, batch 1 and 8 >= 2 (a speed-up)
  best_int8_batch_1             float32 SavedModel / the fastest int8 export at 128 tokens,
                                batch 1 >= 5; the int8 exports are every runtime of
                                tools/benchmark.py's PORTABLE_RUNTIMES whose name has "int8",
                                read when the check runs, --serving_threads threads

Each measurement is tools/benchmark.py (or tools/hf_torch_bench.py) run as a program in a process
of its own, its JSON lines read back: so that our figures are taken under the benchmark's own
flag defaults (jit_compile among them), and no measurement inherits another's threads, memory or
Keras policy.

Prints one JSON line per bar: comparison, ours, theirs, unit, ratio, ratio_of, bar, passed
(true/false/null) and what ours and theirs are; then a summary line with the CPU
(albert_tf.hardware.describe()). A measurement that failed makes its bars fail, with `error`.

Where the CPU has no AMX (AMX-BF16 and AMX-INT8) the bars do not apply: each bar's passed is
null and `skipped` says "no AMX on <cpu>: ...", and stderr says so. By default nothing is then
measured (--skip_without_amx: at the base shape the run takes tens of minutes on such a CPU, and
its figures decide nothing); --noskip_without_amx measures all the same, for the figures.

Exit status 0 when every bar that applies passes or is skipped, 1 when one fails (2 for a usage
error, as the binaries).
"""

import collections
import json
import os
import subprocess
import sys

from absl import flags

import benchmark  # tools/benchmark.py: importable without defining its flags
import hf_torch_bench  # tools/hf_torch_bench.py: the HF side's command line and output

from albert_tf import cli, errors, hardware
from albert_tf import io as albert_io

FLAGS = flags.FLAGS

BENCHMARK = os.path.join(benchmark.REPO_ROOT, "tools", "benchmark.py")
# Issue 32's shape: ALBERT-base's, batch 8, seq 128, 20 masked positions (tools/benchmark.py's
# defaults); the serving bars at 128 tokens, batch 1 and 8.
BATCH_SIZE, SEQ_LENGTH, NUM_PREDICTIONS = 8, 128, 20
SERVING_TOKENS = 128
SERVING_BATCH_SIZES = (1, 8)
PRECISION = "mixed_bfloat16"
# Ours trains with the optimizer HF's step uses (run_pretraining's default is LAMB: a few more
# elementwise ops per variable, not the comparison's point).
OPTIMIZER = "adamw"

Bar = collections.namedtuple("Bar", ["op", "threshold"])
# ratio "time": ours / theirs in seconds (lower is better); "speedup": theirs / ours.
Comparison = collections.namedtuple(
    "Comparison", ["name", "ours", "theirs", "ratio", "bar", "ours_is", "theirs_is"])

COMPARISONS = (
    Comparison("bf16_forward_vs_hf_torch", "forward", "hf_forward", "time", Bar("<=", 0.9),
               "our mixed_bfloat16 forward, seconds (tools/benchmark.py --mode=forward)",
               "HF torch AlbertForPreTraining forward under autocast bf16, seconds"),
    Comparison("bf16_train_vs_hf_torch", "train", "hf_train", "time", Bar("<=", 0.9),
               "our mixed_bfloat16 training step, seconds (tools/benchmark.py --mode=train "
               f"--optimizer={OPTIMIZER})",
               "HF torch AlbertForPreTraining training step under autocast bf16 (AdamW), "
               "seconds"),
    Comparison("bf16_saved_model_batch_1", "saved_model_bfloat16_1", "saved_model_float32_1",
               "speedup", Bar(">=", 2.0),
               f"bf16 SavedModel, tokens signature, {SERVING_TOKENS} tokens, batch 1, p50 ms",
               f"float32 SavedModel, tokens signature, {SERVING_TOKENS} tokens, batch 1, p50 ms"),
    Comparison("bf16_saved_model_batch_8", "saved_model_bfloat16_8", "saved_model_float32_8",
               "speedup", Bar(">=", 2.0),
               f"bf16 SavedModel, tokens signature, {SERVING_TOKENS} tokens, batch 8, p50 ms",
               f"float32 SavedModel, tokens signature, {SERVING_TOKENS} tokens, batch 8, p50 ms"),
    Comparison("best_int8_batch_1", "best_int8_1", "saved_model_float32_1", "speedup",
               Bar(">=", 5.0),
               f"the fastest int8 export, {SERVING_TOKENS} tokens, batch 1, p50 ms",
               f"float32 SavedModel, tokens signature, {SERVING_TOKENS} tokens, batch 1, p50 ms"),
)
RATIO_OF = {"time": "ours / theirs (time: lower is faster)",
            "speedup": "theirs / ours (speed-up: higher is faster)"}


def define_flags():
  """The command line's flags (only when run as a program, as tools/benchmark.py's)."""
  flags.DEFINE_string("config", "base",
                      "Preset name or path to an albert_config.json (both sides build it). Its "
                      f"max_position_embeddings must reach {SERVING_TOKENS}.")
  flags.DEFINE_string("hf_python", sys.executable,
                      "The interpreter that runs tools/hf_torch_bench.py: one with torch and "
                      "transformers (python3 -m venv /tmp/hfvenv && /tmp/hfvenv/bin/pip install "
                      "torch transformers numpy).")
  flags.DEFINE_integer("steps", 5, "Timed calls of each forward and training measurement, both "
                       "sides (the median is kept).", lower_bound=1)
  flags.DEFINE_integer("serving_threads", None,
                       "The int8 exports' runtime threads (LiteRT, ONNX Runtime). Default: every "
                       "CPU thread, as many as the SavedModel's TensorFlow uses.", lower_bound=1)
  flags.DEFINE_bool("skip_without_amx", True,
                    "Where the CPU has no AMX, report the bars as skipped without measuring; "
                    "--noskip_without_amx measures all the same (the bars stay skipped).")
  flags.DEFINE_string("output_json", None,
                      "Where to write the lines (the bars, then the summary) as one JSON list, "
                      "atomically.")


# -- the comparisons ------------------------------------------------------------------------------
def holds(bar, ratio):
  """Whether `ratio` meets `bar` (a Bar)."""
  return ratio <= bar.threshold if bar.op == "<=" else ratio >= bar.threshold


def comparison_line(comparison, measurements, skipped=None):
  """One bar's line.

  Args:
    comparison: a Comparison.
    measurements: {key: {"value": float, "unit": str, ...} or {"error": str}}; keys absent when
      not measured.
    skipped: None, or why the bar does not apply (then passed is null, whatever was measured).

  Returns:
    {comparison, ours, theirs, unit, ratio, ratio_of, bar, passed, ours_is, theirs_is}, with
    `skipped` when skipped, `error` when a measurement failed (passed false), and the fields a
    measurement adds (`details`: the int8 runtime that won, jit_compile, ...).
  """
  c = comparison
  ours, theirs = measurements.get(c.ours), measurements.get(c.theirs)
  line = {"comparison": c.name, "ours": None, "theirs": None, "unit": None, "ratio": None,
          "ratio_of": RATIO_OF[c.ratio], "bar": f"{c.bar.op} {c.bar.threshold:g}",
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
  return 1 if any(line.get("passed") is False for line in lines) else 0


def summary_line(lines, amx, measured):
  """The last line: the CPU, whether it has AMX, and the verdict (passed null when every bar was
  skipped)."""
  failed = [line["comparison"] for line in lines if line["passed"] is False]
  skipped = [line["comparison"] for line in lines if "skipped" in line]
  verdict = None if len(skipped) == len(lines) else not failed
  return {"summary": "amx_check", "cpu": hardware.describe(), "amx": amx, "measured": measured,
          "passed": verdict, "failed": failed, "skipped": skipped,
          "exit_status": exit_status(lines)}


def no_amx_reason(measured):
  """The `skipped` text of every bar on a CPU without AMX."""
  then = ("the figures are for information" if measured
          else "nothing measured (--noskip_without_amx measures anyway)")
  return (f"no AMX on {hardware.cpu_name()}: issue 32's bars are for CPUs with AMX-BF16 and "
          f"AMX-INT8 tiles; {then}")


# -- the measurements -----------------------------------------------------------------------------
def int8_runtimes():
  """tools/benchmark.py's portable runtimes that run int8, as its table has them now."""
  return [name for name in benchmark.PORTABLE_RUNTIMES if "int8" in name]


def _json_lines(argv, what):
  """Runs argv; returns its stdout's JSON lines. Raises RuntimeError naming `what` and the end
  of its stderr when it fails."""
  print(f"amx_check: {what}: {' '.join(argv[1:])}", file=sys.stderr, flush=True)
  result = subprocess.run(argv, cwd=benchmark.REPO_ROOT, capture_output=True, text=True,
                          check=False)
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
  except Exception as e:  # pylint: disable=broad-except
    # A measurement that failed fails its bars; the others still run.
    values = {key: {"error": " ".join(str(e).split())} for key in keys}
  measurements.update(values)


def measure_hf(config, hf_python, steps):
  """HF torch's bf16 forward and training step: {"hf_forward", "hf_train"}."""
  argv = hf_torch_bench.command(
      hf_python, config=config, batch_size=BATCH_SIZE, seq_length=SEQ_LENGTH,
      num_predictions=NUM_PREDICTIONS, mode=["forward", "train"], mixed_precision=[PRECISION],
      steps=steps)
  lines = _json_lines(argv, "HF torch bf16 forward and train (tools/hf_torch_bench.py)")
  out = {}
  for mode in ("forward", "train"):
    line = _one(lines, "tools/hf_torch_bench.py", mode=mode, mixed_precision=PRECISION)
    out[f"hf_{mode}"] = {"value": line["seconds_per_step"], "unit": "s", "details": {
        "hf_torch": line["torch"], "transformers": line["transformers"],
        "hf_threads": line["threads"], "hf_attention": line["attention"]}}
  return out


def measure_ours(config, steps):
  """Our bf16 forward and training step, under tools/benchmark.py's defaults otherwise:
  {"forward", "train"}."""
  argv = _benchmark_command(
      config, "--mode=forward", "--mode=train", f"--mixed_precision={PRECISION}",
      f"--optimizer={OPTIMIZER}", f"--batch_size={BATCH_SIZE}", f"--seq_length={SEQ_LENGTH}",
      f"--num_predictions={NUM_PREDICTIONS}", f"--steps={steps}")
  lines = _json_lines(argv, "our bf16 forward and train (tools/benchmark.py)")
  out = {}
  for mode in ("forward", "train"):
    line = _one(lines, "tools/benchmark.py", mode=mode)
    out[mode] = {"value": line["seconds_per_step"], "unit": "s",
                 "details": {"jit_compile": line["jit_compile"], "threads": line["threads"]}}
  return out


def measure_saved_model(config, precision):
  """The SavedModel of `precision` at SERVING_TOKENS, batch 1 and 8, p50 ms of the tokens
  signature: {"saved_model_<precision>_<batch>"}."""
  argv = _benchmark_command(
      config, "--mode=serving", f"--serving_precision={precision}",
      f"--serving_tokens={SERVING_TOKENS}", "--serving_runtimes=saved_model",
      f"--serving_batch_sizes={','.join(str(b) for b in SERVING_BATCH_SIZES)}")
  lines = _json_lines(argv, f"the {precision} SavedModel (tools/benchmark.py --mode=serving)")
  out = {}
  for batch in SERVING_BATCH_SIZES:
    line = _one(lines, "tools/benchmark.py", runtime="saved_model", signature="tokens",
                tokens=SERVING_TOKENS, batch_size=batch)
    out[f"saved_model_{precision}_{batch}"] = {"value": line["p50_ms"], "unit": "ms"}
  return out


def measure_int8(config, runtimes, threads):
  """Each int8 runtime at SERVING_TOKENS, batch 1 (its own run: one that fails leaves the
  others), and the fastest: {"best_int8_1"}, its details naming the runtime and every one's
  p50 ms (or error)."""
  each = {}
  for runtime in runtimes:
    argv = _benchmark_command(
        config, "--mode=serving", f"--serving_runtimes={runtime}",
        f"--serving_tokens={SERVING_TOKENS}", "--serving_batch_sizes=1",
        f"--serving_threads={threads}")
    try:
      lines = _json_lines(argv, f"the {runtime} export (tools/benchmark.py --mode=serving)")
      each[runtime] = _one(lines, "tools/benchmark.py", runtime=runtime, batch_size=1,
                           tokens=SERVING_TOKENS)["p50_ms"]
    except RuntimeError as e:
      each[runtime] = {"error": " ".join(str(e).split())}
  timed = {r: ms for r, ms in each.items() if not isinstance(ms, dict)}
  if not runtimes:
    raise RuntimeError("tools/benchmark.py's PORTABLE_RUNTIMES has no int8 runtime")
  if not timed:
    raise RuntimeError("no int8 export could be timed: "
                       + "; ".join(f"{r}: {e['error']}" for r, e in each.items()))
  best = min(timed, key=timed.get)
  return {"best_int8_1": {"value": timed[best], "unit": "ms", "details": {
      "int8_runtime": best, "int8_p50_ms": each, "int8_threads": threads}}}


def measure(config, hf_python, steps, serving_threads):
  """Every measurement the bars need, each in a process of its own; a failed one is recorded
  as {"error": ...} under its keys.

  Returns:
    {key: {"value", "unit", "details"?} or {"error"}} for the keys COMPARISONS name.
  """
  m = {}
  _record(m, ("hf_forward", "hf_train"), lambda: measure_hf(config, hf_python, steps))
  _record(m, ("forward", "train"), lambda: measure_ours(config, steps))
  for precision in ("float32", "bfloat16"):
    _record(m, [f"saved_model_{precision}_{b}" for b in SERVING_BATCH_SIZES],
            lambda p=precision: measure_saved_model(config, p))
  _record(m, ("best_int8_1",), lambda: measure_int8(config, int8_runtimes(), serving_threads))
  return m


def run_check(config, hf_python, steps, serving_threads, skip_without_amx):
  """The check: measures unless the CPU has no AMX and `skip_without_amx`, then compares.

  Returns:
    The lines: one per COMPARISONS bar, then the summary line.
  """
  amx = hardware.has_amx()
  measured = amx or not skip_without_amx
  skipped = None if amx else no_amx_reason(measured)
  if skipped:
    print(f"amx_check: {skipped}", file=sys.stderr, flush=True)
  measurements = measure(config, hf_python, steps, serving_threads) if measured else {}
  lines = [comparison_line(c, measurements, skipped) for c in COMPARISONS]
  return lines + [summary_line(lines, amx, measured)]


def check_flags(config, hf_python, measured):
  """Raises errors.UsageError, naming the flag and the fix, for a --config the check cannot
  build or serve at SERVING_TOKENS, or (when measuring) an --hf_python without torch."""
  try:
    loaded = benchmark.load_config(config)
  except (FileNotFoundError, ValueError) as e:
    raise errors.UsageError(f"--config={config}: {e}") from None
  if loaded.max_position_embeddings < SERVING_TOKENS:
    raise errors.UsageError(
        f"--config={config}: max_position_embeddings is {loaded.max_position_embeddings}, under "
        f"the {SERVING_TOKENS} tokens the serving bars are at; use a config with more positions")
  if measured:
    try:
      hf_torch_bench.check_interpreter(hf_python)
    except hf_torch_bench.UsageError as e:
      raise errors.UsageError(str(e)) from None


def main(argv):
  if len(argv) > 1:
    raise errors.UsageError(f"unexpected arguments {argv[1:]}: every setting is a --flag")
  measured = hardware.has_amx() or not FLAGS.skip_without_amx
  check_flags(FLAGS.config, FLAGS.hf_python, measured)
  config = FLAGS.config
  if os.path.exists(config):
    config = os.path.abspath(config)  # the children run in the repository's root
  lines = run_check(config, FLAGS.hf_python, FLAGS.steps,
                    FLAGS.serving_threads or os.cpu_count(), FLAGS.skip_without_amx)
  for line in lines:
    print(json.dumps(line), flush=True)
  if FLAGS.output_json:
    albert_io.write_text_atomically(FLAGS.output_json, json.dumps(lines, indent=1) + "\n")
  return lines[-1]["exit_status"]


if __name__ == "__main__":
  define_flags()
  cli.run(main)
