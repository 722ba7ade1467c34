"""Times ALBERT's forward pass and full pretraining step on synthetic data.

  python tools/benchmark.py --config=base --batch_size=8 --seq_length=128 --mode=all

Prints one JSON line per mode with mode, seconds_per_step (median after warm-up),
examples_per_second and peak_rss_mb. `--config` is a preset name (base, large, xlarge, xxlarge)
or a path to an albert_config.json. `--mode=train` times what run_pretraining runs: the
pretraining Runner's train_steps (one device, as --strategy=one_device), --iterations_per_loop
updates per call, on one synthetic batch repeated by tf.data.
"""

import json
import os
import resource
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from albert_tf.startup import quiet_tensorflow_startup  # noqa: E402

# A script importing TensorFlow below: its start-up notices are quieted before that import.
quiet_tensorflow_startup()

from absl import app, flags  # noqa: E402  pylint: disable=wrong-import-position
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import albert_tf  # noqa: E402
from albert_tf.optimization import create_optimizer  # noqa: E402
from albert_tf.settings import PRECISION_POLICIES, TrainSettings  # noqa: E402
from albert_tf.training import precision, strategy as strategies  # noqa: E402
from albert_tf.training.pretraining import PretrainingRunner  # noqa: E402

FLAGS = flags.FLAGS
flags.DEFINE_string("config", "base", "Preset name or path to an albert_config.json.")
flags.DEFINE_integer("batch_size", 8, "Examples per step.")
flags.DEFINE_integer("seq_length", 128, "Tokens per example.")
flags.DEFINE_integer("num_predictions", 20, "Masked-LM predictions per example.")
flags.DEFINE_enum("mode", "all", ["forward", "train", "serving", "all"],
                  "What to time: forward, train, serving (an exported SavedModel's text and "
                  "tokens signatures), or all of them.")
flags.DEFINE_string("spm_model_file",
                    os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                 "tests", "testdata", "original_pretraining_data",
                                 "30k-clean-tiny.model"),
                    "SentencePiece model for the serving export.")
flags.DEFINE_integer("serving_requests", 30, "Timed requests per serving measurement.")
flags.DEFINE_integer("serving_batch_size", 32, "Batch of the serving throughput measurement.")
flags.DEFINE_integer("warmup_steps", 2, "Untimed calls first (tracing, compilation).")
flags.DEFINE_integer("steps", 5, "Timed calls (train: each runs --iterations_per_loop updates).")
flags.DEFINE_integer("iterations_per_loop", 1,
                     "Train: updates per compiled call, as run_pretraining's flag.", lower_bound=1)
flags.DEFINE_enum("optimizer", "lamb", ["lamb", "adamw"], "Optimizer of the training step.")
flags.DEFINE_bool("jit_compile", True, "Compile the step with XLA.")
flags.DEFINE_enum("mixed_precision", "float32", list(PRECISION_POLICIES),
                  "Keras precision policy, as run_pretraining's flag (mixed_float16 adds its "
                  "dynamic loss scale to the training step).")


def _config():
  if os.path.exists(FLAGS.config):
    return albert_tf.AlbertConfig.from_json_file(FLAGS.config)
  return albert_tf.AlbertConfig.from_preset(FLAGS.config)


def synthetic_batch(config, batch_size, seq_length, num_predictions, seed=0):
  rng = np.random.default_rng(seed)
  ints = lambda high, shape: tf.constant(rng.integers(0, high, size=shape), tf.int32)
  return {
      "input_ids": ints(config.vocab_size, (batch_size, seq_length)),
      "input_mask": tf.ones((batch_size, seq_length), tf.int32),
      "segment_ids": ints(2, (batch_size, seq_length)),
      "masked_lm_positions": ints(seq_length, (batch_size, num_predictions)),
      "masked_lm_ids": ints(config.vocab_size, (batch_size, num_predictions)),
      "masked_lm_weights": tf.ones((batch_size, num_predictions), tf.float32),
      "next_sentence_labels": ints(2, (batch_size, 1)),
  }


def time_steps(fn, warmup, steps):
  for _ in range(warmup):
    _block(fn())
  times = []
  for _ in range(steps):
    start = time.perf_counter()
    _block(fn())
    times.append(time.perf_counter() - start)
  return statistics.median(times)


def _block(result):
  for t in tf.nest.flatten(result):
    if hasattr(t, "numpy"):
      t.numpy()


def peak_rss_mb():
  return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def report(mode, seconds, batch_size, **extra):
  # Seconds to 4 significant digits: a tiny model's update takes well under a millisecond.
  line = {"mode": mode, "batch_size": batch_size, "seconds_per_step": float(f"{seconds:.4g}"),
          "examples_per_second": round(batch_size / seconds, 2),
          "peak_rss_mb": round(peak_rss_mb(), 1)}
  line.update(extra)
  print(json.dumps(line), flush=True)
  return line


def _percentile(values, q):
  return float(np.percentile(np.asarray(values) * 1000.0, q))


def benchmark_serving(model, seq_length, batch_sizes, requests, warmup):
  """Exports `model` as a SavedModel, loads it as TF Serving would, and times its text and tokens
  signatures: latency percentiles and examples/s per batch size."""
  import shutil  # pylint: disable=import-outside-toplevel
  import tempfile  # pylint: disable=import-outside-toplevel
  # The text signatures' SentencePiece ops, which TF Serving links.
  import tensorflow_text  # noqa: F401  pylint: disable=import-outside-toplevel,unused-import
  from albert_tf.export.saved_model import ServingModule, export_saved_model  # pylint: disable=import-outside-toplevel
  base = tempfile.mkdtemp(prefix="albert_serving_bench_")
  try:
    module = ServingModule(model, FLAGS.spm_model_file, True, seq_length)
    export_saved_model(module, base, 1)
    served = tf.saved_model.load(os.path.join(base, "1"))
    words = "the quick brown fox jumps over the lazy dog while 1,234 people watch".split()
    text = " ".join(words[i % len(words)] for i in range(seq_length * 2))
    rng = np.random.default_rng(0)
    lines = []
    for batch in batch_sizes:
      requests_by_signature = {
          "text": ("serving_default", {"text": tf.constant([text] * batch)}),
          "tokens": ("tokens", {
              "input_ids": tf.constant(rng.integers(5, 900, (batch, seq_length)), tf.int32),
              "input_mask": tf.ones((batch, seq_length), tf.int32),
              "segment_ids": tf.zeros((batch, seq_length), tf.int32)}),
      }
      for label, (signature, inputs) in requests_by_signature.items():
        fn = served.signatures[signature]
        for _ in range(warmup):
          _block(fn(**inputs))
        times = []
        n = requests if batch == 1 else max(3, requests // 6)
        for _ in range(n):
          start = time.perf_counter()
          _block(fn(**inputs))
          times.append(time.perf_counter() - start)
        line = {"mode": "serving", "signature": label, "batch_size": batch,
                "seq_length": seq_length, "p50_ms": round(_percentile(times, 50), 2),
                "p99_ms": round(_percentile(times, 99), 2),
                "examples_per_second": round(batch * len(times) / sum(times), 2),
                "peak_rss_mb": round(peak_rss_mb(), 1), "requests": n}
        print(json.dumps(line), flush=True)
        lines.append(line)
    return lines
  finally:
    shutil.rmtree(base, ignore_errors=True)


def pretraining_runner(strategy, model):
  """run_pretraining's Runner for `model`: its optimizer, schedule, clipping, loss scale."""
  settings = TrainSettings(optimizer=FLAGS.optimizer, learning_rate=1e-4, num_train_steps=1000,
                           num_warmup_steps=10, train_batch_size=FLAGS.batch_size,
                           iterations_per_loop=FLAGS.iterations_per_loop,
                           jit_compile=FLAGS.jit_compile)
  with strategy.scope():
    optimizer = create_optimizer(settings.optimizer)
    loss_scale = precision.loss_scale_for(FLAGS.mixed_precision)
  return PretrainingRunner(strategy, model, optimizer, settings, loss_scale)


def main(_):
  precision.set_policy(FLAGS.mixed_precision)  # before the model, as run_pretraining
  config = _config()
  strategy = strategies.create_strategy("one_device")
  with strategy.scope():
    model = albert_tf.AlbertPretrainer(config)
  batch = synthetic_batch(config, FLAGS.batch_size, FLAGS.seq_length, FLAGS.num_predictions)
  common = dict(batch_size=FLAGS.batch_size, seq_length=FLAGS.seq_length,
                num_predictions=FLAGS.num_predictions, jit_compile=FLAGS.jit_compile,
                mixed_precision=FLAGS.mixed_precision, config=FLAGS.config,
                threads=os.cpu_count())
  if FLAGS.mode in ("forward", "all"):
    forward = tf.function(lambda b: model(b)["masked_lm_logits"], jit_compile=FLAGS.jit_compile)
    seconds = time_steps(lambda: forward(batch), FLAGS.warmup_steps, FLAGS.steps)
    report("forward", seconds, **common)
  if FLAGS.mode in ("train", "all"):
    runner = pretraining_runner(strategy, model)
    iterator = iter(strategy.distribute_datasets_from_function(
        lambda _: tf.data.Dataset.from_tensors(batch).repeat()))
    n = FLAGS.iterations_per_loop
    # train_steps returns Python floats: each call has finished its n updates when it returns.
    seconds = time_steps(lambda: runner.train_steps(iterator, n), FLAGS.warmup_steps,
                         FLAGS.steps) / n
    report("train", seconds, optimizer=FLAGS.optimizer, iterations_per_loop=n, **common)
  if FLAGS.mode in ("serving", "all"):
    benchmark_serving(model, FLAGS.seq_length, [1, FLAGS.serving_batch_size],
                      FLAGS.serving_requests, FLAGS.warmup_steps)


if __name__ == "__main__":
  app.run(main)
