"""finetuning/job.py's FineTuningJob, its evaluation: an evaluation of a fine-tuned
--init_checkpoint without --do_train reports the evaluated checkpoint's own global step, as the
original's estimator.evaluate does: in eval_results.txt, best_trial.txt and the model.ckpt-best
it saves; and it says what it evaluates when it starts. Jobs are built from settings alone,
in-process."""

import logging
import os

import pytest

from albert_tf.checkpoints import open_checkpoint
from albert_tf.core import settings
from albert_tf.finetuning import evaluation
from albert_tf.tasks.classifier import settings as classifier_settings
from albert_tf.tasks.classifier.job import ClassifierJob
from helpers import ORIGINAL_MODEL, TESTDATA

CONFIG = os.path.join(ORIGINAL_MODEL, "albert_config.json")
SPM = os.path.join(TESTDATA, "original_pretraining_data", "30k-clean-tiny.model")
GLUE_DATA = os.path.join(TESTDATA, "original_finetuning", "glue", "glue_data")
STEPS = 3


def _classifier(out, init, train=False):
  """An MRPC ClassifierJob evaluating on the bundled rows (STEPS AdamW steps first when
  `train`); the config is the one --init_checkpoint keeps, else the fixture's."""
  return ClassifierJob(classifier_settings.ClassifierSettings(
      output_dir=str(out), task_name="mrpc", data_dir=GLUE_DATA, do_train=train, do_eval=True,
      eval_batch_size=4,
      model=settings.ModelSettings(albert_config_file=None if not train else CONFIG,
                                   max_seq_length=48, init_checkpoint=str(init)),
      tokenizer=settings.TokenizerSettings(spm_model_file=None if not train else SPM),
      train=settings.TrainSettings(optimizer="adamw", train_batch_size=4,
                                   num_train_steps=STEPS, num_warmup_steps=1,
                                   learning_rate=1e-3, save_checkpoints_steps=STEPS)))


@pytest.fixture(scope="module")
def fine_tuned(tmp_path_factory):
  """An MRPC output_dir fine-tuned STEPS steps from the fixture model (model.ckpt-<STEPS> and
  model.ckpt-best, its config and tokenizer kept beside them)."""
  out = tmp_path_factory.mktemp("fine_tuned") / "out"
  _classifier(out, os.path.join(ORIGINAL_MODEL, "model.ckpt-0"), train=True).run()
  return str(out)


def _blocks(path):
  """eval_results.txt as one {key: value} per evaluation."""
  blocks = []
  for block in open(path).read().split("=" * 50):
    lines = [line.split(" = ", 1) for line in block.strip().splitlines()]
    if lines:
      blocks.append(dict(lines))
  return blocks


@pytest.mark.parametrize("given", ["output_dir", "prefix"])
def test_the_evaluated_checkpoints_step_is_reported(fine_tuned, tmp_path, caplog, monkeypatch,
                                                    given):
  # The output_dir opens as its model.ckpt-best (the released layout, its step saved as
  # `global_step`); the prefix is a model.ckpt-<step> of ours (an object-based checkpoint).
  init = fine_tuned if given == "output_dir" else os.path.join(fine_tuned, f"model.ckpt-{STEPS}")
  opened = open_checkpoint(init)
  assert opened.global_step == STEPS
  out = tmp_path / "eval"
  # A line after every batch instead of every PROGRESS_SECONDS: how far a long pass got.
  monkeypatch.setattr(evaluation, "PROGRESS_SECONDS", 0)
  with caplog.at_level(logging.INFO, logger="albert_tf"):
    _classifier(out, init).run()
  [block] = _blocks(out / "eval_results.txt")
  assert block["checkpoint"] == "<init>"
  assert int(block["global_step"]) == STEPS
  # The best is this evaluation, at the same step: best_trial.txt and model.ckpt-best say so.
  last, best_step, best_value = open(out / "best_trial.txt").read().split(":")
  assert (int(last), int(best_step)) == (STEPS, STEPS)
  assert float(best_value) == float(block["eval_accuracy"])
  assert open_checkpoint(str(out / "model.ckpt-best")).global_step == STEPS
  assert f"evaluating --init_checkpoint={opened.location} (step {STEPS})" in caplog.messages
  # After each of the batches (of at most 4: cut by length) of the 12 dev rows.
  progress = [m.split(" in ")[0] for m in caplog.messages if m.startswith("ran the model")]
  assert progress[-1] == f"ran the model over {len(progress)} batches (12 examples)"
  assert [m.split(" batches")[0] for m in progress] == [
      f"ran the model over {n}" for n in range(1, len(progress) + 1)]
