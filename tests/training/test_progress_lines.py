"""A binary is never silent for long: the first call of the training or evaluation step (the
trace, then XLA's compilation with --jit_compile: tens of seconds on a CPU) is announced before it
starts, with the trace's time once done, and every evaluation says what it evaluates. The trace
made for the announcement is the one the call uses (no second trace)."""

import logging
import os

import numpy as np
import pytest
import tensorflow as tf

import albert_tf
from albert_tf.core.settings import TrainSettings
from albert_tf.data.pipeline import pretraining_dataset
from albert_tf.optimization import Lamb
from albert_tf.training.pretraining import PretrainingRunner
from helpers import ORIGINAL_MODEL, run_binary

RECORDS = os.path.join(ORIGINAL_MODEL, "train.tfrecord")
CONFIG = os.path.join(ORIGINAL_MODEL, "albert_config.json")


def _messages(caplog):
  messages = [r.getMessage() for r in caplog.records if r.name == "albert_tf"]
  caplog.clear()
  return messages


def _traced_in(message, what):
  """The seconds of a "traced <what> in <s> s" line."""
  prefix = f"traced {what} in "
  assert message.startswith(prefix) and message.endswith(" s"), message
  return float(message[len(prefix):-2])


def test_first_calls_are_announced_and_traced_once(caplog):
  caplog.set_level(logging.INFO, logger="albert_tf")
  config = albert_tf.AlbertConfig.from_json_file(CONFIG)
  tf.keras.utils.set_random_seed(3)
  runner = PretrainingRunner(tf.distribute.get_strategy(), albert_tf.AlbertPretrainer(config),
                             Lamb(), TrainSettings(train_batch_size=2, num_train_steps=5,
                                                   num_warmup_steps=1))
  iterator = iter(pretraining_dataset(RECORDS, 24, 5, 2, is_training=True, seed=5))

  assert np.isfinite(runner.train_steps(iterator, 2)["loss"])
  tracing, traced, running = _messages(caplog)
  assert tracing == "tracing the training step (its first call) ..."
  assert _traced_in(traced, "the training step") > 0
  assert running == "running steps 1-2 ..."  # no --jit_compile: nothing to compile
  runner.train_steps(iterator, 3)
  assert _messages(caplog) == []  # later calls reuse the trace: nothing to wait for
  assert runner._train_loop.experimental_get_tracing_count() == 1

  assert runner.evaluate(iterator, 1)["global_step"] == 5
  tracing, traced, evaluating = _messages(caplog)
  assert tracing == "tracing the evaluation step (its first call) ..."
  assert _traced_in(traced, "the evaluation step") > 0
  assert evaluating == "evaluating the model of step 5 on 1 batch ..."
  runner.evaluate(iterator, 2)
  assert _messages(caplog) == ["evaluating the model of step 5 on 2 batches ..."]
  assert runner._eval_loop.experimental_get_tracing_count() == 1


@pytest.mark.slow
def test_run_pretraining_says_what_it_compiles_and_evaluates(tmp_path):
  out = tmp_path / "out"
  r = run_binary("run_pretraining", [
      f"--input_file={RECORDS}", f"--output_dir={out}", f"--albert_config_file={CONFIG}",
      "--max_seq_length=24", "--max_predictions_per_seq=5", "--train_batch_size=2",
      "--num_train_steps=2", "--num_warmup_steps=1", "--iterations_per_loop=2", "--jit_compile",
      "--do_eval", "--eval_batch_size=2", "--max_eval_steps=1"])
  lines = [line.split("] ", 1)[-1] for line in r.stderr.splitlines()]
  expected = [
      "tracing the training step (its first call) ...",
      "running steps 1-2 (XLA compiles the step as the first one runs) ...",
      "step 2/2 ",
      "***** Running evaluation *****",
      f"  Model = {out / 'model.ckpt-2'}",
      "tracing the evaluation step (its first call) ...",
      "evaluating the model of step 2 on 1 batch ...",
      "***** Eval results *****",
  ]
  found = [next((i for i, line in enumerate(lines) if line.startswith(want)), None)
           for want in expected]
  assert None not in found and found == sorted(found), (found, r.stderr[-3000:])
