"""Our graphs are traced without autograph (docs/speed.md, Start-up): while a runner trains and
evaluates on dynamically masked records, while the predictor runs and while the serving
signatures are traced, autograph converts no named function of albert_tf. Its conversion of
the step, the objective, the optimizer and the in-graph tokenizers cost 4-7 s of CPU in every
binary run. Autograph's converter is wrapped to record what it converts."""

import os

import numpy as np
import pytest
import tensorflow as tf
from tensorflow.python.autograph.impl import api as autograph_api

import albert_tf
from albert_tf.core.settings import TokenizerSettings, TrainSettings
from albert_tf.data.pipeline import DynamicMasking, pretraining_dataset
from albert_tf.export.saved_model import ServingModule
from albert_tf.finetuning.evaluation import Predictor
from albert_tf.optimization import create_optimizer
from albert_tf.training.pretraining import PretrainingRunner
from helpers import ORIGINAL_MODEL, TESTDATA

RECORDS = os.path.join(TESTDATA, "original_pretraining_data", "expected.tfrecord")
SPM = os.path.join(TESTDATA, "original_pretraining_data", "30k-clean-tiny.model")


@pytest.fixture
def converted(monkeypatch):
  """The `module:qualname` of each function autograph converts while the test runs."""
  names = []
  convert = autograph_api._convert_actual

  def recording(entity, program_ctx):
    names.append(f"{getattr(entity, '__module__', '?')}:{getattr(entity, '__qualname__', '?')}")
    return convert(entity, program_ctx)

  monkeypatch.setattr(autograph_api, "_convert_actual", recording)
  return names


def ours(names):
  # The one-line lambdas handed to Dataset.map are converted still (a few ms each): what they
  # call is not, being marked do_not_convert.
  return [n for n in names if n.startswith("albert_tf") and not n.endswith("<lambda>")]


def test_the_recorder_sees_a_conversion(converted):
  @tf.function
  def count_up(n):
    total = tf.constant(0)
    for i in tf.range(n):  # a loop over a tensor: autograph's to convert
      total += i
    return total

  assert int(count_up(tf.constant(4))) == 6
  assert any(n.endswith("count_up") for n in converted), converted


@pytest.mark.slow
def test_training_evaluation_prediction_and_serving_convert_nothing_of_ours(converted):
  config = albert_tf.AlbertConfig.from_json_file(os.path.join(ORIGINAL_MODEL,
                                                              "albert_config.json"))
  model = albert_tf.AlbertPretrainer(config)
  runner = PretrainingRunner(tf.distribute.get_strategy(), model, create_optimizer("lamb"),
                             TrainSettings(train_batch_size=2, num_train_steps=4,
                                           num_warmup_steps=1))
  iterator = iter(pretraining_dataset(RECORDS, 64, 10, 2, True, seed=1,
                                      dynamic=DynamicMasking(vocab_size=config.vocab_size)))
  assert np.isfinite(runner.train_steps(iterator, 2)["loss"])
  assert runner.evaluate(iterator, 1)["global_step"] == 2

  batch = next(iterator)
  pooled = lambda features: {"pooled_output": model.encoder(features)["pooled_output"]}
  outputs = Predictor(tf.distribute.get_strategy(), pooled).run(tf.data.Dataset.from_tensors(
      {k: batch[k] for k in ("input_ids", "input_mask", "segment_ids")}))
  assert outputs["pooled_output"].shape == (2, config.hidden_size)

  module = ServingModule(model, TokenizerSettings(spm_model_file=SPM), max_seq_length=16)
  for name, function in module.signatures().items():
    assert function.get_concrete_function() is not None, name
  assert not ours(converted), f"autograph converted {ours(converted)}: trace without it"
