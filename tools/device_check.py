"""What tools/device_check.sh runs after its fixture tests, on whatever accelerator TensorFlow sees.

  bash tools/device_check.sh --output_json=device_check.json     # a GPU machine
  bash tools/device_check.sh --tiny                              # a CPU machine, tiny shapes

Parts, each in a child process of its own (a part's device set-up cannot be undone in-process,
and one part failing or hanging must not cost the others' figures):

  mirrored    the fixture's 4 LAMB updates (tests/testdata/original_model: model.ckpt-0 ->
              model.ckpt-4, the flags in train_settings.json) by run_pretraining's Runner under a
              MirroredStrategy over two logical devices carved from the first GPU (two logical
              CPUs without one), float32 with TF32 off; passes when the losses, weights and LAMB
              slots are within 1e-5 of the original's.
  throughput  run_pretraining's training step at the ALBERT-base shape (batch 32, seq 512,
              20 predictions; --tiny: the fixture config, batch 2, seq 16, 3 predictions),
              mixed_bfloat16 and XLA, timed by tools/benchmark.py: seconds/step, TFLOP/s, MFU.

Prints a PASS/FAIL summary (with device_check.sh's fixture-test result) and the figures; exits 1
when any part failed. --output_json writes the same as one JSON object (its directory is made
before any part runs). A mistake in the flags is one `error:` line, exit status 2, as the
binaries' (albert_tf.core.cli).
"""

import json
import os
import subprocess
import sys
import tempfile
import time
import types

from absl import app, flags

import benchmark  # tools/benchmark.py: FLOP count, peak table, timed Runner step
from albert_tf.core import cli, io  # no TensorFlow

REPO_ROOT = benchmark.REPO_ROOT
FIXTURE = os.path.join(REPO_ROOT, "tests", "testdata", "original_model")
# The fixture's tolerance (tests/testdata/FIXTURES_README.md: float32 agreement to expect).
TOLERANCE = 1e-5
PARTS = ("mirrored", "throughput")
# (config, batch size, sequence length, predictions per sequence) of the throughput part.
BASE_SHAPE = ("base", 32, 512, 20)
TINY_SHAPE = (os.path.join(FIXTURE, "albert_config.json"), 2, 16, 3)
THROUGHPUT_PRECISION = "mixed_bfloat16"

FLAGS = flags.FLAGS


def define_flags():
  """The command line's flags (only when run as a program, as tools/benchmark.py's)."""
  flags.DEFINE_bool("tiny", False,
                    "CPU mode: the throughput part at tiny shapes (the fixture config, batch 2, "
                    "seq 16) instead of ALBERT-base at batch 32, seq 512, and no accelerator "
                    "needed.")
  flags.DEFINE_string("output_json", None, "Where to write the results as one JSON object.")
  flags.DEFINE_enum("part", None, list(PARTS),
                    "Run this part alone, in this process, writing its result to "
                    "--output_json (how the check runs each part; default: every part, each in "
                    "a child process).")
  flags.DEFINE_enum("fixture_tests", "not_run", ["passed", "failed", "not_run"],
                    "What device_check.sh's pytest run of the fixture tests gave, for the "
                    "summary.")
  flags.DEFINE_float("peak_tflops", None,
                     "Peak TFLOP/s of the device, for MFU. Default: tools/benchmark.py's PEAKS "
                     "table for the GPU or TPU TensorFlow reports (none on a CPU).",
                     lower_bound=0.0)
  flags.DEFINE_integer("logical_device_memory_mb", 4096,
                       "Mirrored part: the memory limit of each of the two logical GPUs carved "
                       "from the first GPU.", lower_bound=256)
  flags.DEFINE_integer("warmup_steps", 2, "Throughput: untimed calls first (XLA compilation).")
  flags.DEFINE_integer("steps", 5, "Throughput: timed calls.", lower_bound=1)
  flags.DEFINE_integer("iterations_per_loop", 10,
                       "Throughput: updates per call, as run_pretraining's flag.", lower_bound=1)
  flags.DEFINE_integer("part_timeout_s", 180,
                       "Seconds each part may take before it is stopped and counted as failed.",
                       lower_bound=1)


# The flags a part's child process is given, as this process has them.
_PART_FLAGS = ("tiny", "peak_tflops", "logical_device_memory_mb", "warmup_steps", "steps",
               "iterations_per_loop")


def carve_two_devices(memory_limit_mb):
  """Makes two logical devices of the first GPU (each `memory_limit_mb`), or of the CPU when
  there is no GPU, for a two-replica MirroredStrategy on one chip. Call before TensorFlow
  initialises its devices. Returns the physical device's name."""
  import tensorflow as tf
  from albert_tf.training import strategy as strategies
  gpus = tf.config.list_physical_devices("GPU")
  if not gpus:
    strategies.split_cpu(2)
    return "CPU"
  # Other GPUs hidden: the strategy would take their devices too.
  tf.config.set_visible_devices(gpus[0], "GPU")
  tf.config.set_logical_device_configuration(
      gpus[0], [tf.config.LogicalDeviceConfiguration(memory_limit=memory_limit_mb)] * 2)
  return benchmark.accelerator_name()


def _max_abs_diff(pairs):
  """max |a - b| over (name, a, b) triples, and the name where it is reached."""
  import numpy as np
  worst = (0.0, None)
  for name, a, b in pairs:
    diff = float(np.max(np.abs(np.asarray(a, np.float64) - np.asarray(b, np.float64))))
    worst = max(worst, (diff, name), key=lambda w: w[0])
  return worst


def mirrored_fixture_updates(memory_limit_mb):
  """The fixture's 4 LAMB updates on two mirrored replicas of one device, as run_pretraining's
  Runner makes them, against the original's (model.ckpt-4 and its losses).

  Float32 with TF32 off: TF32 rounds matmul inputs to 10 mantissa bits, far beyond 1e-5.

  Returns:
    {passed, replicas, devices, physical_device, losses, expected_losses, max_abs_diff_losses,
     max_abs_diff_weights (and worst_weight), max_abs_diff_slots (and worst_slot), tolerance}.
  """
  import tensorflow as tf
  physical = carve_two_devices(memory_limit_mb)
  tf.config.experimental.enable_tensor_float_32_execution(False)
  import albert_tf
  from albert_tf.core import settings
  from albert_tf.checkpoints.layout import original_variable_map
  from albert_tf.data.pipeline import pretraining_dataset
  from albert_tf.models import pretraining_losses
  from albert_tf.training import strategy as strategies
  with open(os.path.join(FIXTURE, "train_settings.json"), encoding="utf-8") as f:
    fixture = json.load(f)["train"]
  # The original run's flags, as run_pretraining would take them; one update per call, so that
  # the loss before each update is seen.
  train = settings.from_values(settings.TrainSettings, types.SimpleNamespace(**fixture),
                               iterations_per_loop=1)
  strategy = strategies.create_strategy("mirrored")
  config = albert_tf.AlbertConfig.from_json_file(os.path.join(FIXTURE, "albert_config.json"))
  with strategy.scope():
    model = albert_tf.AlbertPretrainer(config)
  runner = benchmark.pretraining_runner(strategy, model, train, "float32")
  albert_tf.load_original_checkpoint(model, os.path.join(FIXTURE, "model.ckpt-0"))
  records = os.path.join(FIXTURE, fixture["input_file"])
  # T, P and the global batch B of the records: [B, T] ids, [B, P] masked positions.
  sizes = (fixture["max_seq_length"], fixture["max_predictions_per_seq"],
           train.train_batch_size)
  iterator = iter(strategy.distribute_datasets_from_function(
      lambda ctx: pretraining_dataset(records, *sizes, is_training=True, input_context=ctx)))
  losses = [runner.train_steps(iterator, 1)["loss"] for _ in range(train.num_train_steps)]
  batch = next(iter(pretraining_dataset(records, *sizes, is_training=False)))
  losses.append(float(pretraining_losses(model(batch), batch)["total_loss"]))
  expected = fixture["losses_before_each_update_and_after_last"]
  reader = tf.train.load_checkpoint(os.path.join(FIXTURE, "model.ckpt-4"))
  variables = original_variable_map(model)
  weights = _max_abs_diff((n, v.numpy(), reader.get_tensor(n)) for n, v in variables.items())
  slots = _max_abs_diff((n, value, reader.get_tensor(n))
                        for n, value in runner.optimizer.slot_tensors().items())
  loss_diff = _max_abs_diff([("losses", losses, expected)])[0]
  replicas = strategy.num_replicas_in_sync
  return {
      "passed": replicas == 2 and max(loss_diff, weights[0], slots[0]) <= TOLERANCE,
      "replicas": replicas, "devices": list(strategy.extended.worker_devices),
      "physical_device": physical, "losses": losses, "expected_losses": expected,
      "max_abs_diff_losses": loss_diff, "max_abs_diff_weights": weights[0],
      "worst_weight": weights[1], "max_abs_diff_slots": slots[0], "worst_slot": slots[1],
      "tolerance": TOLERANCE,
  }


def training_throughput(tiny, peak_tflops, warmup_steps, steps, iterations_per_loop):
  """tools/benchmark.py's train line for run_pretraining's step at the check's shape, with
  mixed_bfloat16 and XLA. Without --tiny it refuses to run on a CPU (batch 32 at seq 512 would
  take hours there)."""
  import tensorflow as tf
  config_name, batch_size, seq_length, predictions = TINY_SHAPE if tiny else BASE_SHAPE
  device = benchmark.accelerator_name()
  if device is None and not tiny:
    raise RuntimeError("TensorFlow sees no GPU or TPU, and the base-shape training steps need "
                       "one: check `nvidia-smi` and that TensorFlow was installed with CUDA "
                       "(pip install 'tensorflow[and-cuda]'), or run with --tiny on a CPU")
  config = benchmark.load_config(config_name)
  strategy, model = benchmark.build_pretrainer(config, THROUGHPUT_PRECISION)
  batch = benchmark.synthetic_batch(config, batch_size, seq_length, predictions)
  line = benchmark.benchmark_train(
      strategy, model, config, batch, iterations_per_loop=iterations_per_loop, jit_compile=True,
      mixed_precision=THROUGHPUT_PRECISION, warmup_steps=warmup_steps, steps=steps,
      peak_tflops=peak_tflops,
      fields={"config": config_name, "seq_length": seq_length, "num_predictions": predictions})
  if tf.config.list_physical_devices("GPU"):
    # Headroom for larger batches: what the step held at most on the GPU.
    line["gpu_peak_memory_mb"] = round(
        tf.config.experimental.get_memory_info("GPU:0")["peak"] / 2**20, 1)
  return dict(line, passed=line["seconds_per_step"] > 0)


def run_part(part):
  """This process runs one part (the child side of run_parts)."""
  from albert_tf.core.startup import quiet_tensorflow_startup
  quiet_tensorflow_startup()
  if part == "mirrored":
    result = mirrored_fixture_updates(FLAGS.logical_device_memory_mb)
  else:
    result = training_throughput(FLAGS.tiny, FLAGS.peak_tflops, FLAGS.warmup_steps, FLAGS.steps,
                                 FLAGS.iterations_per_loop)
  import tensorflow as tf
  result["tensorflow"] = tf.__version__
  return result


def run_parts():
  """Runs each part in a child process (its log streams through) and collects the results;
  a part that fails, crashes or times out is recorded with the reason."""
  results = {}
  with tempfile.TemporaryDirectory(prefix="device_check_") as tmp:
    for part in PARTS:
      out = os.path.join(tmp, f"{part}.json")
      cmd = [sys.executable, os.path.abspath(__file__), f"--part={part}", f"--output_json={out}"]
      cmd += [f"--{name}={FLAGS[name].value}" for name in _PART_FLAGS
              if FLAGS[name].value is not None]
      print(f"== device check: {part} ==", flush=True)
      start = time.monotonic()
      # The mirrored part compares float32 updates at 1e-5: TF32 off in cuBLAS and cuDNN too,
      # beside TensorFlow's own switch that the part turns off.
      env = dict(os.environ, NVIDIA_TF32_OVERRIDE="0") if part == "mirrored" else None
      try:
        code = subprocess.run(cmd, cwd=REPO_ROOT, env=env, timeout=FLAGS.part_timeout_s,
                              check=False).returncode
      except subprocess.TimeoutExpired:
        code = None
      seconds = round(time.monotonic() - start, 1)
      if os.path.exists(out):
        with open(out, encoding="utf-8") as f:
          results[part] = json.load(f)
      elif code is None:
        results[part] = {"passed": False, "error": f"timed out after {FLAGS.part_timeout_s} s "
                                                   f"(raise --part_timeout_s)"}
      else:
        results[part] = {"passed": False,
                         "error": f"exit status {code} without a result (see its log above)"}
      results[part]["wall_seconds"] = seconds
  return results


def summary(results, tiny, fixture_tests):
  """The lines printed at the end: one PASS/FAIL line per part with its figures, then the
  verdict."""
  def verdict(ok):
    return "PASS" if ok else "FAIL"

  lines = ["", "==== device check summary ====",
           f"fixture tests (float32, TF32 off)   "
           f"{'not run' if fixture_tests == 'not_run' else verdict(fixture_tests == 'passed')}"]
  m = results["mirrored"]
  if "error" in m:
    lines.append(f"mirrored fixture updates            FAIL  {m['error']}")
  else:
    lines.append(
        f"mirrored fixture updates            {verdict(m['passed'])}  {m['replicas']} replicas "
        f"on {m['physical_device']}; max |diff| losses {m['max_abs_diff_losses']:.2e}, weights "
        f"{m['max_abs_diff_weights']:.2e}, LAMB slots {m['max_abs_diff_slots']:.2e} "
        f"(tolerance {m['tolerance']:.0e})")
  t = results["throughput"]
  if "error" in t:
    lines.append(f"training throughput                 FAIL  {t['error']}")
  else:
    mfu = (f"MFU {t['mfu']:.3f} (peak {t['peak_tflops']} TFLOP/s, {t['peak_source']})"
           if t["mfu"] is not None else f"MFU n/a ({t['mfu_note']})")
    memory = (f", GPU memory peak {t['gpu_peak_memory_mb']} MB"
              if "gpu_peak_memory_mb" in t else "")
    lines.append(
        f"training throughput                 {verdict(t['passed'])}  {t['config']}, batch "
        f"{t['batch_size']}, seq {t['seq_length']}, {t['mixed_precision']}, "
        f"{'XLA' if t['jit_compile'] else 'no XLA'} on {t['accelerator']}: {t['seconds_per_step']} s/step, {t['examples_per_second']} "
        f"examples/s, {t['achieved_tflops']} TFLOP/s, {mfu}{memory}")
  lines.append(f"DEVICE CHECK{' (--tiny)' if tiny else ''}: {verdict(results['passed'])}")
  return "\n".join(lines)


def _write_json(path, value):
  io.write_text_atomically(path, json.dumps(value, indent=1) + "\n")


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f"unexpected arguments {argv[1:]}: every setting is a --flag")
  if FLAGS.output_json:  # a path it cannot write is told now, not after the parts have run
    io.makedirs(os.path.dirname(FLAGS.output_json))
  if FLAGS.part:
    try:
      result = run_part(FLAGS.part)
    except Exception as e:  # pylint: disable=broad-except
      # Recorded as this part's failure, the traceback in the log; the other parts go on.
      import traceback
      traceback.print_exc()
      result = {"passed": False, "error": f"{type(e).__name__}: {e}"}
    if FLAGS.output_json:
      _write_json(FLAGS.output_json, result)
    print(json.dumps({FLAGS.part: result}), flush=True)
    return 0 if result["passed"] else 1
  results = {"tiny": FLAGS.tiny, "fixture_tests": FLAGS.fixture_tests}
  results.update(run_parts())
  results["passed"] = (FLAGS.fixture_tests != "failed"
                       and all(results[part]["passed"] for part in PARTS))
  if FLAGS.output_json:
    _write_json(FLAGS.output_json, results)
  print(summary(results, FLAGS.tiny, FLAGS.fixture_tests), flush=True)
  return 0 if results["passed"] else 1


if __name__ == "__main__":
  define_flags()
  cli.run(main)
