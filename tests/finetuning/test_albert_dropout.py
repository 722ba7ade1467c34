"""--albert_dropout (the paper's "ALBERT DR", Table 14): a fine-tuning run's encoder dropout,
replacing the config's hidden_dropout_prob and attention_probs_dropout_prob. It is trained with,
kept in output_dir with the config, and a resume must give it again. Jobs are built from settings
alone, in-process, on the fixture model and the bundled MRPC rows."""

import json
import os

import numpy as np
import pytest
import tensorflow as tf

from albert_tf.core import errors, settings
from albert_tf.tasks.classifier import settings as classifier_settings
from albert_tf.tasks.classifier.job import ClassifierJob
from helpers import ORIGINAL_MODEL, TESTDATA

CONFIG = os.path.join(ORIGINAL_MODEL, "albert_config.json")
SPM = os.path.join(TESTDATA, "original_pretraining_data", "30k-clean-tiny.model")
GLUE_DATA = os.path.join(TESTDATA, "original_finetuning", "glue", "glue_data")
STEPS = 2


def _job(out, albert_dropout, steps=STEPS):
  return ClassifierJob(classifier_settings.ClassifierSettings(
      output_dir=str(out), task_name="mrpc", data_dir=GLUE_DATA, do_train=True,
      model=settings.ModelSettings(albert_config_file=CONFIG, max_seq_length=48,
                                   init_checkpoint=os.path.join(ORIGINAL_MODEL, "model.ckpt-0"),
                                   albert_dropout=albert_dropout),
      tokenizer=settings.TokenizerSettings(spm_model_file=SPM),
      run=settings.RunSettings(random_seed=7, data_seed=7),
      train=settings.TrainSettings(optimizer="adamw", train_batch_size=4, num_train_steps=steps,
                                   num_warmup_steps=1, learning_rate=1e-3,
                                   save_checkpoints_steps=STEPS)))


def _weights(out, step=STEPS):
  reader = tf.train.load_checkpoint(os.path.join(str(out), f"model.ckpt-{step}"))
  # The model's weights (a run with dropout also keeps its dropout layers' seed states).
  return {n: reader.get_tensor(n) for n in reader.get_variable_to_shape_map()
          if "VARIABLE_VALUE" in n and "OPTIMIZER_SLOT" not in n and "dropout_seeds" not in n}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
  """output_dirs trained STEPS steps with the same seeds: the config's dropout (0), 0 given,
  and 0.1 given."""
  outs = {}
  for name, dropout in (("config", None), ("zero", 0.0), ("dropout", 0.1)):
    outs[name] = tmp_path_factory.mktemp(name) / "out"
    job = _job(outs[name], dropout)
    expected = 0.0 if dropout is None else dropout
    assert (job.config.hidden_dropout_prob, job.config.attention_probs_dropout_prob) == (
        expected, expected)
    job.run()
  return outs


@pytest.mark.slow
def test_the_encoder_trains_with_the_given_dropout(runs):
  config, zero, dropout = (_weights(runs[k]) for k in ("config", "zero", "dropout"))
  assert len(config) > 20 and set(config) == set(zero) == set(dropout)
  # 0 given is the fixture config's own 0: the same run, bit for bit.
  for name in config:
    np.testing.assert_array_equal(config[name], zero[name], err_msg=name)
  # 0.1 drops units in the encoder: the same seeds and data give other updates.
  changed = [n for n in config if not np.array_equal(config[n], dropout[n])]
  assert any("encoder" in n or "transformer" in n for n in changed), changed


@pytest.mark.slow
def test_output_dir_keeps_the_dropout_and_the_given_config_is_unchanged(runs):
  with open(runs["dropout"] / "albert_config.json") as f:
    kept = json.load(f)
  assert kept["hidden_dropout_prob"] == kept["attention_probs_dropout_prob"] == 0.1
  with open(CONFIG) as f:
    given = json.load(f)
  assert given["hidden_dropout_prob"] == given["attention_probs_dropout_prob"] == 0
  assert {k: v for k, v in kept.items() if "dropout" not in k} == {
      k: v for k, v in given.items() if "dropout" not in k}


@pytest.mark.slow
def test_a_resume_must_give_the_same_dropout(runs):
  out = runs["dropout"]
  with pytest.raises(errors.ResumeMismatchError,
                     match=r"hidden_dropout_prob 0(\.0)? \(was 0\.1\)"):
    _job(out, None, steps=STEPS + 1).run()
  # With --albert_dropout again it resumes (one more step from model.ckpt-STEPS).
  _job(out, 0.1, steps=STEPS + 1).run()
  assert os.path.exists(os.path.join(str(out), f"model.ckpt-{STEPS + 1}.index"))


@pytest.mark.parametrize("value", [-0.1, 1.0])
def test_a_dropout_outside_its_range_is_refused(value):
  with pytest.raises(errors.UsageError, match=r"albert_dropout=.*must be between 0\.0 and 0\.999"):
    settings.ModelSettings(albert_dropout=value)
