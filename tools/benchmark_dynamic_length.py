"""Times fine-tuning input at fixed padding against dynamic-length batches (run_classifier's
--dynamic_length) on GLUE-style text, and checks that both give the same logits.

  python tools/benchmark_dynamic_length.py --config=base --max_seq_length=128

Features are built from the GLUE TSVs under --data_dir (default: the fixture's, every task's
train/dev/test). Prints one JSON line per mode (eval: a forward pass over every example; train:
--train_steps AdamW steps) with seconds for fixed padding and for dynamic-length batches, the
speed-up, the mean real length, and for eval the largest logit difference between the two (in
file order). A mistake is one `error:` line, as the binaries' (albert_tf.core.cli), found before
TensorFlow is imported.
"""

import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from absl import flags
import numpy as np

# TensorFlow and what imports it are imported in main(), after the flags are checked.
import albert_tf
from albert_tf.core import cli, errors
from albert_tf.tasks.classifier import features as classifier_data
from albert_tf.tasks.classifier import data as glue
from albert_tf.tokenization import FullTokenizer
from albert_tf.core.settings import TrainSettings

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURE = os.path.join(ROOT, "tests", "testdata")
FLAGS = flags.FLAGS
flags.DEFINE_string("config", "base", "Preset name or path to an albert_config.json.")
flags.DEFINE_string("data_dir", os.path.join(FIXTURE, "original_finetuning", "glue", "glue_data"),
                    "GLUE data directory (task folders with TSVs).")
flags.DEFINE_string("spm_model_file",
                    os.path.join(FIXTURE, "original_pretraining_data", "30k-clean-tiny.model"),
                    "SentencePiece model.")
flags.DEFINE_integer("max_seq_length", 128, "Fixed padding length.")
flags.DEFINE_integer("batch_size", 32, "Examples per batch.", lower_bound=1)
flags.DEFINE_integer("train_steps", 6, "Timed training steps per mode (after one untimed).",
                     lower_bound=0)
flags.DEFINE_bool("jit_compile", False, "Compile the training step with XLA.")


def build_features(path):
  tokenizer = FullTokenizer(spm_model_file=FLAGS.spm_model_file)
  examples = []
  for task in ("cola", "mnli", "mrpc", "rte", "sst-2", "qqp", "qnli", "wnli"):
    processor = glue.processor(task)
    for split in ("train", "dev", "test"):
      for example in processor.get_examples(FLAGS.data_dir, split):
        example.label = "0"  # one binary label space for the whole mix
        examples.append(example)
  classifier_data.file_based_convert_examples_to_features(
      examples, ["0"], FLAGS.max_seq_length, tokenizer, path)
  return len(examples)


def _config():
  if os.path.exists(FLAGS.config):
    return albert_tf.AlbertConfig.from_json_file(FLAGS.config)
  return albert_tf.AlbertConfig.from_preset(FLAGS.config)


def checked_config():
  """The --config, the other flags checked against it and --data_dir (cli.run checks
  --spm_model_file, as every binary's).

  Raises:
    errors.UsageError, FileNotFoundError: naming the flag and the fix.
  """
  try:
    config = _config()
  except (FileNotFoundError, ValueError) as e:  # albert_tf's ConfigError is a ValueError
    raise errors.UsageError(f"--config={FLAGS.config}: {e}") from None
  if FLAGS.max_seq_length > config.max_position_embeddings:
    raise errors.UsageError(
        f"--max_seq_length={FLAGS.max_seq_length}: over the config's max_position_embeddings "
        f"({config.max_position_embeddings}): give a length up to it")
  if not os.path.isdir(FLAGS.data_dir):
    raise FileNotFoundError(f"--data_dir: no such directory: {FLAGS.data_dir}: give the GLUE "
                            "data directory (its task folders hold the TSVs)")
  return config


def time_eval(model, path, dynamic):
  import tensorflow as tf
  from albert_tf.finetuning.inputs import (
      classifier_features, feature_dataset, in_file_order)
  forward = tf.function(lambda b: model(b)["logits"], reduce_retracing=True)
  batches = list(feature_dataset(path, classifier_features(FLAGS.max_seq_length), FLAGS.batch_size,
                                 False, FLAGS.max_seq_length, dynamic_length=dynamic))
  for b in batches:  # trace every shape first
    forward(b).numpy()
  start = time.perf_counter()
  logits = np.concatenate([forward(b).numpy() for b in batches])
  seconds = time.perf_counter() - start
  order = np.concatenate([b["example_index"].numpy() for b in batches])
  return seconds, in_file_order({"logits": logits, "example_index": order})["logits"]


def time_train(config, path, dynamic):
  import tensorflow as tf
  from albert_tf.finetuning.inputs import classifier_features, feature_dataset
  from albert_tf.finetuning.objectives import ClassificationObjective
  from albert_tf.optimization import create_optimizer
  from albert_tf.training.runner import Runner
  model = albert_tf.AlbertClassifier(config, 2, dropout_rate=0.0)
  runner = Runner(tf.distribute.get_strategy(), model, create_optimizer("adamw"),
                  TrainSettings(learning_rate=1e-5, num_train_steps=1000, num_warmup_steps=0,
                                jit_compile=FLAGS.jit_compile),
                  ClassificationObjective())
  data = feature_dataset(path, classifier_features(FLAGS.max_seq_length), FLAGS.batch_size, True,
                         FLAGS.max_seq_length, dynamic_length=dynamic, seed=0)
  iterator = iter(data)
  runner.train_steps(iterator, 1)
  times = []
  for _ in range(FLAGS.train_steps):
    start = time.perf_counter()
    runner.train_steps(iterator, 1)
    times.append(time.perf_counter() - start)
  return sum(times)


def main(argv):
  if len(argv) > 1:
    raise errors.UsageError(f"unexpected arguments {argv[1:]}: every setting is a --flag")
  config = checked_config()
  from albert_tf.core.startup import quiet_tensorflow_startup
  quiet_tensorflow_startup()  # before TensorFlow's first import
  from albert_tf.finetuning.inputs import (
      classifier_features, feature_dataset)
  with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "features.tf_record")
    n = build_features(path)
    lengths = [float(b["input_mask"].numpy().sum(1).mean()) for b in feature_dataset(
        path, classifier_features(FLAGS.max_seq_length), n, False, FLAGS.max_seq_length,
        dynamic_length=False)]
    common = {"config": FLAGS.config, "max_seq_length": FLAGS.max_seq_length,
              "batch_size": FLAGS.batch_size, "examples": n,
              "mean_real_length": round(lengths[0], 1), "threads": os.cpu_count()}
    model = albert_tf.AlbertClassifier(config, 2, dropout_rate=0.0)
    fixed_s, fixed_logits = time_eval(model, path, dynamic=False)
    dynamic_s, dynamic_logits = time_eval(model, path, dynamic=True)
    print(json.dumps(dict(common, mode="eval", fixed_seconds=round(fixed_s, 3),
                          dynamic_seconds=round(dynamic_s, 3),
                          speedup=round(fixed_s / dynamic_s, 2),
                          max_logit_diff=float(np.abs(fixed_logits - dynamic_logits).max()))),
          flush=True)
    if FLAGS.train_steps:
      fixed_s = time_train(config, path, dynamic=False)
      dynamic_s = time_train(config, path, dynamic=True)
      print(json.dumps(dict(common, mode="train", steps=FLAGS.train_steps,
                            fixed_seconds=round(fixed_s, 3), dynamic_seconds=round(dynamic_s, 3),
                            speedup=round(fixed_s / dynamic_s, 2))), flush=True)


if __name__ == "__main__":
  cli.run(main)
