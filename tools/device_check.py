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
  sweep       the same step on real records, ALBERT-base at batch 32, 64, 128, 256 at seq 512
              and 128, 256, 512, 1024 at seq 128 (--tiny: the fixture config at small shapes),
              each unpacked and packed (--sweep_max_sequences_per_row): MFU, sequences/s and
              real tokens/s per point, and the best point's MFU against MFU_GOAL. The records
              are made first, in the part: the sample corpus (data/sample/corpus.txt) cut into
              documents of 2-4 sentences (tools/make_short_documents.py), then
              create_pretraining_data, one file per sequence length. A sequence length's sweep
              stops at the first point that runs out of memory (ResourceExhaustedError) or
              fails; points that would overrun --sweep_budget_s (half of it for each length,
              what one leaves to the next) are skipped, and say so.

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
PARTS = ("mirrored", "throughput", "sweep")
# (config, batch size, sequence length, predictions per sequence) of the throughput part.
BASE_SHAPE = ("base", 32, 512, 20)
TINY_SHAPE = (os.path.join(FIXTURE, "albert_config.json"), 2, 16, 3)
THROUGHPUT_PRECISION = "mixed_bfloat16"
# The sweep's (sequence length, batch sizes), longest first; predictions per sequence.
SWEEP_SHAPES = ((512, (32, 64, 128, 256)), (128, (128, 256, 512, 1024)))
SWEEP_PREDICTIONS = 20
# --tiny: one batch size a length. Each point compiles its own step, and XLA compiles a
# mixed_bfloat16 step slowly on a CPU without bf16 units; the batch sizes' loop is run_sweep's,
# which its tests drive with canned points.
TINY_SWEEP_SHAPES = ((32, (2,)), (16, (4,)))
TINY_SWEEP_PREDICTIONS = 3
# The goal of the sweep's best point: MFU against the datasheet's bf16 dense peak.
MFU_GOAL = 0.45
SAMPLE_CORPUS = os.path.join(REPO_ROOT, "data", "sample", "corpus.txt")
SPM_MODEL = os.path.join(REPO_ROOT, "tests", "testdata", "original_pretraining_data",
                         "30k-clean-tiny.model")
SWEEP_DATA_SEED = 12345

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
                       "Seconds each part may take before it is stopped and counted as failed "
                       "(the sweep: at least --sweep_budget_s + 120).",
                       lower_bound=1)
  flags.DEFINE_integer("sweep_budget_s", 200,
                       "Sweep: seconds for its points (records and start-up besides), half for "
                       "each sequence length; a point that would overrun is skipped.",
                       lower_bound=1)
  flags.DEFINE_integer("sweep_warmup_steps", 1, "Sweep: untimed calls per point (compilation).",
                       lower_bound=0)
  flags.DEFINE_integer("sweep_steps", 2, "Sweep: timed calls per point.", lower_bound=1)
  flags.DEFINE_integer("sweep_iterations_per_loop", 4, "Sweep: updates per call.",
                       lower_bound=1)
  flags.DEFINE_integer("sweep_max_sequences_per_row", 4,
                       "Sweep: the packed points' sequences per row at most, as "
                       "run_pretraining's --max_sequences_per_row.", lower_bound=1)
  flags.DEFINE_integer("sweep_dupe_factor", 5,
                       "Sweep: create_pretraining_data's --dupe_factor for the records.",
                       lower_bound=1)


# The flags a part's child process is given, as this process has them.
_PART_FLAGS = ("tiny", "peak_tflops", "logical_device_memory_mb", "warmup_steps", "steps",
               "iterations_per_loop", "sweep_budget_s", "sweep_warmup_steps", "sweep_steps",
               "sweep_iterations_per_loop", "sweep_max_sequences_per_row", "sweep_dupe_factor")


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


def build_sweep_records(directory, seq_lengths, predictions, dupe_factor):
  """The sweep's records: the sample corpus cut into short documents, then
  create_pretraining_data at each sequence length (in parallel processes).

  Args:
    directory: where the corpus and the records are written.
    seq_lengths: the records' max_seq_length, one file each.
    predictions: max_predictions_per_seq.
    dupe_factor: create_pretraining_data's --dupe_factor.

  Returns:
    {seq_length: the TFRecord file}.

  Raises:
    RuntimeError: a step failed (its stderr's end in the message).
  """
  corpus = os.path.join(directory, "short_documents.txt")
  files = {t: os.path.join(directory, f"short_documents_{t}.tfrecord") for t in seq_lengths}
  steps = [("tools/make_short_documents.py",
            [[os.path.join(REPO_ROOT, "tools", "make_short_documents.py"),
              f"--input={SAMPLE_CORPUS}", f"--output={corpus}"]]),
           ("create_pretraining_data",  # one process per length, at once
            [["-m", "albert_tf.create_pretraining_data", f"--input_file={corpus}",
              f"--output_file={path}", f"--spm_model_file={SPM_MODEL}", "--vocab_file=unused",
              f"--max_seq_length={t}", f"--max_predictions_per_seq={predictions}",
              f"--dupe_factor={dupe_factor}"] for t, path in files.items()])]
  for what, commands in steps:
    children = [subprocess.Popen([sys.executable] + args, cwd=REPO_ROOT,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
                for args in commands]
    for args, child in zip(commands, children):
      _, stderr = child.communicate()
      if child.returncode != 0:
        raise RuntimeError(f"{what} ({' '.join(args[1:])}) failed with exit status "
                           f"{child.returncode}: {stderr[-2000:]}")
  return files


def is_out_of_memory(error):
  """Whether `error` is TensorFlow's out-of-memory error (XLA's too, which may come wrapped in
  another op error, RESOURCE_EXHAUSTED in its message)."""
  import tensorflow as tf
  return (isinstance(error, tf.errors.ResourceExhaustedError)
          or (isinstance(error, tf.errors.OpError) and "RESOURCE_EXHAUSTED" in str(error)))


def run_sweep(shapes, measure, budget_s, clock=time.monotonic, log=print):
  """The sweep's points, each sequence length's batch sizes in order, unpacked then packed.

  A sequence length's points stop at the first that runs out of memory (is_out_of_memory): the
  larger batches would need more. A point that fails otherwise stops its variant (unpacked or
  packed) at that length. What is stopped is skipped, with the reason. Each length has until
  its share of `budget_s` (length i of n: budget_s (i + 1) / n from the start, so what one
  leaves goes to the next); a point is skipped when the previous one's time would take it past
  that.

  Args:
    shapes: ((sequence length, (batch sizes, ...)), ...).
    measure: (seq_length, batch_size, packed) -> the point's train line (dict).
    budget_s: seconds for all the points.
    clock: seconds, monotonic.
    log: called with a line per point.

  Returns:
    A list of points: {seq_length, batch_size, packed, status ("ok", "out_of_memory", "failed"
    or "skipped"), seconds (measured points), reason (skipped and failed ones), and an "ok"
    point's train line}.
  """
  start = clock()
  points = []
  for i, (seq_length, batch_sizes) in enumerate(shapes):
    deadline = start + budget_s * (i + 1) / len(shapes)
    stopped, last_seconds = {False: None, True: None}, 0.0  # by packed: why, or None
    for batch_size in batch_sizes:
      for packed in (False, True):
        point = {"seq_length": seq_length, "batch_size": batch_size, "packed": packed}
        points.append(point)
        if stopped[packed] or clock() + last_seconds > deadline:
          point.update(status="skipped", reason=stopped[packed] or "the sweep's time budget "
                       "(--sweep_budget_s)")
          continue
        began = clock()
        try:
          point.update(measure(seq_length, batch_size, packed), status="ok")
        except Exception as e:  # noqa: BLE001 -- recorded in the point: see below
          oom = is_out_of_memory(e)
          point.update(status="out_of_memory" if oom else "failed",
                       reason=f"{type(e).__name__}: {str(e)[:300]}")
          why = (f"{'out of memory' if oom else 'failed'} at batch {batch_size} "
                 f"({'packed' if packed else 'unpacked'})")
          for variant in ((False, True) if oom else (packed,)):
            stopped[variant] = stopped[variant] or why
        last_seconds = point["seconds"] = round(clock() - began, 1)
        log(sweep_point_text(point))
  return points


def sweep_point_text(point):
  """One point of the sweep as a line of text."""
  head = (f"seq {point['seq_length']:>4} batch {point['batch_size']:>4} "
          f"{'packed  ' if point['packed'] else 'unpacked'}")
  if point["status"] != "ok":
    return f"{head}  {point['status']}: {point.get('reason', '')}"
  mfu = f"{point['mfu']:.3f}" if point.get("mfu") is not None else "n/a"
  memory = (f", GPU memory peak {point['gpu_peak_memory_mb']} MB"
            if "gpu_peak_memory_mb" in point else "")
  return (f"{head}  MFU {mfu}, {point['sequences_per_second']:.1f} sequences/s, "
          f"{point['real_tokens_per_second']:.0f} real tokens/s (padding "
          f"{point['padding_fraction']:.2f}), {point['seconds_per_step']} s/step{memory}")


def sweep_summary(points, peak_note=None):
  """The sweep's verdict: passed when every sequence length measured a point unpacked and one
  packed; the best point (highest MFU, else real tokens/s) against MFU_GOAL.

  Returns:
    {passed, best (the point or None), mfu_goal, meets_mfu_goal (None without an MFU)}.
  """
  ok = [p for p in points if p["status"] == "ok"]
  lengths = {p["seq_length"] for p in points}
  passed = all(any(p["seq_length"] == t and p["packed"] == packed for p in ok)
               for t in lengths for packed in (False, True))
  best = max(ok, key=lambda p: (p.get("mfu") or 0.0, p["real_tokens_per_second"]),
             default=None)
  mfu = best.get("mfu") if best else None
  return {"passed": passed, "best": best, "mfu_goal": MFU_GOAL,
          "meets_mfu_goal": None if mfu is None else mfu >= MFU_GOAL,
          "mfu_note": peak_note if mfu is None else None}


def training_sweep(tiny, peak_tflops, warmup_steps, steps, iterations_per_loop,
                   max_sequences_per_row, dupe_factor, budget_s):
  """The sweep part: records made, then run_sweep of benchmark_train on them (mixed_bfloat16,
  XLA). Without --tiny it refuses to run on a CPU, as the throughput part.

  Returns:
    {passed, points, best, mfu_goal, meets_mfu_goal, records (seq length -> file, as made),
     records_seconds, records_source, max_sequences_per_row, config}.
  """
  import gc
  import tensorflow as tf
  device = benchmark.accelerator_name()
  if device is None and not tiny:
    raise RuntimeError("TensorFlow sees no GPU or TPU, and the base-shape sweep needs one: "
                       "check `nvidia-smi`, or run with --tiny on a CPU")
  config_name = TINY_SHAPE[0] if tiny else "base"
  shapes = TINY_SWEEP_SHAPES if tiny else SWEEP_SHAPES
  predictions = TINY_SWEEP_PREDICTIONS if tiny else SWEEP_PREDICTIONS
  config = benchmark.load_config(config_name)
  gpu = bool(tf.config.list_physical_devices("GPU"))
  with tempfile.TemporaryDirectory(prefix="device_check_sweep_") as tmp:
    began = time.monotonic()
    files = build_sweep_records(tmp, [t for t, _ in shapes], predictions, dupe_factor)
    records_seconds = round(time.monotonic() - began, 1)
    print(f"sweep records made in {records_seconds} s: {sorted(files)}", flush=True)

    def measure(seq_length, batch_size, packed):
      records = benchmark.Records((files[seq_length],), seq_length, predictions, batch_size,
                                  max_sequences_per_row if packed else None, SWEEP_DATA_SEED)
      strategy, model = benchmark.build_pretrainer(config, THROUGHPUT_PRECISION)
      if gpu:
        tf.config.experimental.reset_memory_stats("GPU:0")
      try:
        line = benchmark.benchmark_train(
            strategy, model, config, records, iterations_per_loop=iterations_per_loop,
            jit_compile=True, mixed_precision=THROUGHPUT_PRECISION, warmup_steps=warmup_steps,
            steps=steps, peak_tflops=peak_tflops,
            fields={"config": config_name, "seq_length": seq_length,
                    "num_predictions": predictions})
        if gpu:
          line["gpu_peak_memory_mb"] = round(
              tf.config.experimental.get_memory_info("GPU:0")["peak"] / 2**20, 1)
        return line
      finally:
        # The next point's memory: this point's model, optimizer and step let go.
        del model, strategy
        tf.keras.backend.clear_session()
        gc.collect()

    points = run_sweep(shapes, measure, budget_s,
                       log=lambda text: print(f"sweep: {text}", flush=True))
  ok = [p for p in points if p["status"] == "ok"]
  result = sweep_summary(points, ok[0].get("mfu_note") if ok else None)
  result.update(points=points, records={str(t): os.path.basename(f) for t, f in files.items()},
                records_seconds=records_seconds,
                records_source=("data/sample/corpus.txt cut into documents of 2-4 sentences "
                                "(tools/make_short_documents.py), create_pretraining_data "
                                f"--dupe_factor={dupe_factor}"),
                max_sequences_per_row=max_sequences_per_row, config=config_name,
                accelerator=device or "CPU")
  return result


def run_part(part):
  """This process runs one part (the child side of run_parts)."""
  from albert_tf.core.startup import quiet_tensorflow_startup
  quiet_tensorflow_startup()
  if part == "mirrored":
    result = mirrored_fixture_updates(FLAGS.logical_device_memory_mb)
  elif part == "sweep":
    result = training_sweep(FLAGS.tiny, FLAGS.peak_tflops, FLAGS.sweep_warmup_steps,
                            FLAGS.sweep_steps, FLAGS.sweep_iterations_per_loop,
                            FLAGS.sweep_max_sequences_per_row, FLAGS.sweep_dupe_factor,
                            FLAGS.sweep_budget_s)
  else:
    result = training_throughput(FLAGS.tiny, FLAGS.peak_tflops, FLAGS.warmup_steps, FLAGS.steps,
                                 FLAGS.iterations_per_loop)
  import tensorflow as tf
  result["tensorflow"] = tf.__version__
  return result


def part_timeout(part):
  """Seconds `part` may take: --part_timeout_s; the sweep at least its budget and two minutes
  for its records and start-up."""
  if part == "sweep":
    return max(FLAGS.part_timeout_s, FLAGS.sweep_budget_s + 120)
  return FLAGS.part_timeout_s


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
      timeout = part_timeout(part)
      try:
        code = subprocess.run(cmd, cwd=REPO_ROOT, env=env, timeout=timeout,
                              check=False).returncode
      except subprocess.TimeoutExpired:
        code = None
      seconds = round(time.monotonic() - start, 1)
      if os.path.exists(out):
        with open(out, encoding="utf-8") as f:
          results[part] = json.load(f)
      elif code is None:
        results[part] = {"passed": False, "error": f"timed out after {timeout} s "
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
        f"{'XLA' if t['jit_compile'] else 'no XLA'} on {t['accelerator']}: "
        f"{t['seconds_per_step']} s/step, {t['examples_per_second']} examples/s, "
        f"{t['achieved_tflops']} TFLOP/s, {mfu}{memory}")
  lines += sweep_lines(results.get("sweep"), verdict)
  lines.append(f"DEVICE CHECK{' (--tiny)' if tiny else ''}: {verdict(results['passed'])}")
  return "\n".join(lines)


def sweep_lines(sweep, verdict):
  """The summary's lines of the sweep part (none where it did not run): its verdict, the best
  point against MFU_GOAL, then every point."""
  if sweep is None:
    return []
  if "error" in sweep:
    return [f"training sweep                      FAIL  {sweep['error']}"]
  best = sweep["best"]
  if best is None:
    goal = "no point measured"
  elif sweep["meets_mfu_goal"] is None:
    goal = f"best MFU n/a ({sweep['mfu_note']})"
  else:
    goal = (f"best MFU {best['mfu']:.3f} at seq {best['seq_length']} batch {best['batch_size']} "
            f"{'packed' if best['packed'] else 'unpacked'}: goal >= {sweep['mfu_goal']} "
            f"{'met' if sweep['meets_mfu_goal'] else 'NOT met'}")
  compiled = {p.get("jit_compile") for p in sweep["points"] if p["status"] == "ok"}
  # XLA is asked for; on CPUs with bf16 units mixed_bfloat16 compiles without it (fast_path).
  xla = {frozenset({True}): "XLA", frozenset({False}): "no XLA"}.get(frozenset(compiled),
                                                                     "XLA on some points")
  lines = [f"training sweep                      {verdict(sweep['passed'])}  {sweep['config']}, "
           f"{THROUGHPUT_PRECISION}, {xla} on {sweep['accelerator']}, packed <= "
           f"{sweep['max_sequences_per_row']} a row; {goal}",
           f"  records: {sweep['records_source']} ({sweep['records_seconds']} s)"]
  return lines + ["  " + sweep_point_text(point) for point in sweep["points"]]


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
    except Exception as e:  # noqa: BLE001 -- recorded: see below
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
