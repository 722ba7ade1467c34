"""AlbertClassifier against the original's classifier (classifier_utils.create_model): outputs at
model.ckpt-0 on the dev features, and 4 AdamW updates to model.ckpt-4."""

import json
import os

import numpy as np
import pytest
import tensorflow as tf

import albert_tf
from albert_tf.finetuning.inputs import classifier_features, feature_dataset
from albert_tf.finetuning.objectives import ClassificationObjective
from albert_tf.models import classification_losses
from albert_tf.optimization import create_optimizer
from albert_tf.core.settings import TrainSettings
from albert_tf.training.runner import Runner
from helpers import ORIGINAL_MODEL, TESTDATA, read_tf1_checkpoint

FINETUNING = os.path.join(TESTDATA, "original_finetuning")
CONFIG = os.path.join(ORIGINAL_MODEL, "albert_config.json")
TASKS = {"mrpc": 2, "sts-b": 1}


def _classifier(task, dropout_rate=0.0):
  config = albert_tf.AlbertConfig.from_json_file(CONFIG)
  model = albert_tf.AlbertClassifier(config, TASKS[task], dropout_rate=dropout_rate)
  report = albert_tf.load_original_checkpoint(
      model, os.path.join(FINETUNING, "classifier", task, "model.ckpt-0"))
  assert not report.missing and not report.unused, report
  return model


def _reference(task):
  return dict(np.load(os.path.join(FINETUNING, "classifier", task, "reference.npz")))


@pytest.mark.parametrize("task", sorted(TASKS))
@pytest.mark.parametrize("trimmed", [False, True])
def test_outputs_at_ckpt0(task, trimmed):
  ref = _reference(task)
  model = _classifier(task)
  names = ("input_ids", "input_mask", "segment_ids")
  if trimmed:  # each example alone, cut to its own length (dynamic-length batches of one)
    lengths = ref["dev_input_mask"].sum(1)
    assert lengths.min() < 48
    logits = np.concatenate([model({k: ref["dev_" + k][i:i + 1, :n] for k in names})["logits"]
                             for i, n in enumerate(lengths)])
  else:
    logits = model({k: ref["dev_" + k] for k in names})["logits"]
  out = classification_losses(logits, ref["dev_label_ids"], regression=task == "sts-b")
  for key in ("loss", "per_example_loss", "probabilities", "logits", "predictions"):
    np.testing.assert_allclose(out[key], ref[key], atol=1e-5, err_msg=key)


@pytest.mark.parametrize("task", sorted(TASKS))
def test_four_adamw_updates(task):
  ref = _reference(task)
  with open(os.path.join(FINETUNING, "classifier", task, "settings.json")) as f:
    settings = json.load(f)
  model = _classifier(task)
  regression = task == "sts-b"
  runner = Runner(tf.distribute.get_strategy(), model, create_optimizer(settings["optimizer"]),
                  TrainSettings(learning_rate=settings["learning_rate"],
                                num_train_steps=settings["num_train_steps"],
                                num_warmup_steps=settings["num_warmup_steps"]),
                  ClassificationObjective(regression))
  train_file = os.path.join(FINETUNING, "glue", "expected", f"{task}_train.tfrecord")
  batch = next(iter(feature_dataset(train_file, classifier_features(48, regression), 4,
                                    is_training=False, max_seq_length=48,
                                    dynamic_length=False)))  # the first 4 records
  iterator = iter(tf.data.Dataset.from_tensors(batch).repeat())
  losses = [runner.train_steps(iterator, 1)["loss"] for _ in range(4)]
  final = classification_losses(model(batch)["logits"], batch["label_ids"], regression)["loss"]
  np.testing.assert_allclose(losses + [float(final)], ref["train_losses"], atol=1e-5)

  expected = read_tf1_checkpoint(os.path.join(FINETUNING, "classifier", task, "model.ckpt-4"))
  names = albert_tf.checkpoints.layout.original_variable_map(model)
  assert "output_weights" in names and "output_bias" in names
  for name, variable in names.items():
    np.testing.assert_allclose(variable.numpy(), expected[name], atol=1e-5, err_msg=name)


def test_round_trip_in_the_original_layout(tmp_path):
  model = _classifier("mrpc")
  prefix = albert_tf.save_original_checkpoint(model, str(tmp_path / "model.ckpt-7"), global_step=7)
  written = read_tf1_checkpoint(prefix)
  original = read_tf1_checkpoint(os.path.join(FINETUNING, "classifier", "mrpc", "model.ckpt-0"))
  model_names = {n for n in original if not n.endswith(("adam_m", "adam_v")) and n != "global_step"}
  assert set(written) - {"global_step"} == model_names
  for name in model_names:
    np.testing.assert_array_equal(written[name], original[name], err_msg=name)
  assert written["global_step"] == 7


def test_pretrained_checkpoint_leaves_the_new_layer_initialised():
  config = albert_tf.AlbertConfig.from_json_file(CONFIG)
  model = albert_tf.AlbertClassifier(config, 3)
  report = albert_tf.load_checkpoint(model, os.path.join(ORIGINAL_MODEL, "model.ckpt-0"))
  assert report.missing == ["output_bias", "output_weights"]
  assert any(n.startswith("cls/") for n in report.unused)
  assert model.classifier.output_weights.shape == (3, 32)
  assert 0 < float(tf.math.reduce_std(model.classifier.output_weights)) < 0.03
