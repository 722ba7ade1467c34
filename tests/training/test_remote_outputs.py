"""The jobs write every output through TensorFlow's file systems: with output_dir on ram:// (TF's
in-memory file system, standing in for gs://) they run, their files land there, and nothing is
written to a local folder named `ram:`. Jobs are built from settings alone, without flags."""

import os

import pytest
import tensorflow as tf

from albert_tf.core import settings
from albert_tf.tasks.classifier.job import ClassifierJob
from albert_tf.tasks.pretraining.job import PretrainingJob
from albert_tf.tasks.classifier import settings as classifier_settings
from helpers import ORIGINAL_MODEL, TESTDATA
import warm_binaries

CONFIG = os.path.join(ORIGINAL_MODEL, "albert_config.json")
SPM = os.path.join(TESTDATA, "original_pretraining_data", "30k-clean-tiny.model")
GLUE_DATA = os.path.join(TESTDATA, "original_finetuning", "glue", "glue_data")


def _listing(root):
  return sorted(os.path.relpath(os.path.join(d, f), root) for d, _, files in
                tf.io.gfile.walk(root) for f in files)


@pytest.fixture(autouse=True)
def _in_tmp_cwd(tmp_path, monkeypatch):
  monkeypatch.chdir(tmp_path)
  yield
  assert not os.path.exists(tmp_path / "ram:"), "a local ram: folder was written"


@pytest.mark.slow  # trains
def test_pretraining_job_writes_to_ram():
  out = "ram://remote_outputs/pretraining"
  PretrainingJob(settings.PretrainingSettings(
      output_dir=out, input_file=os.path.join(ORIGINAL_MODEL, "eval.tfrecord"),
      max_predictions_per_seq=5, do_eval=True, eval_batch_size=3, max_eval_steps=1,
      model=settings.ModelSettings(albert_config_file=CONFIG, max_seq_length=24,
                                   init_checkpoint=os.path.join(ORIGINAL_MODEL, "model.ckpt-0")),
      train=settings.TrainSettings(train_batch_size=2, num_train_steps=2, num_warmup_steps=1,
                                   learning_rate=0.01, save_checkpoints_steps=2,
                                   iterations_per_loop=1))).run()
  files = _listing(out)
  assert {"checkpoint", "model.ckpt-2.index", "eval_results.txt"} <= set(files), files
  assert not [f for f in files if f.endswith(".lock")]  # released at the end
  assert "global_step = 2" in tf.io.gfile.GFile(f"{out}/eval_results.txt").read()


@pytest.mark.slow
def test_classifier_job_writes_to_ram():
  out, export = "ram://remote_outputs/mrpc", "ram://remote_outputs/mrpc_export"
  ClassifierJob(classifier_settings.ClassifierSettings(
      output_dir=out, task_name="mrpc", data_dir=GLUE_DATA, do_train=True, do_eval=True,
      do_predict=True, export_dir=export, eval_batch_size=4,
      model=settings.ModelSettings(albert_config_file=CONFIG, max_seq_length=48,
                                   init_checkpoint=os.path.join(ORIGINAL_MODEL, "model.ckpt-0")),
      tokenizer=settings.TokenizerSettings(spm_model_file=SPM),
      train=settings.TrainSettings(optimizer="adamw", train_batch_size=4, num_train_steps=2,
                                   num_warmup_steps=1, learning_rate=1e-3,
                                   save_checkpoints_steps=2))).run()
  files = set(_listing(out))
  for name in ("mrpc_train.tf_record", "mrpc_eval.tf_record", "predict.tf_record",
               "model.ckpt-2.index", "model.ckpt-best.index", "eval_results.txt",
               "best_trial.txt", "test_results.tsv", "submit_results.tsv"):
    assert name in files, (name, files)
  [version] = tf.io.gfile.listdir(export)
  assert tf.io.gfile.exists(f"{export}/{version.rstrip('/')}/saved_model.pb")


@pytest.mark.slow
def test_binary_with_output_dir_on_ram(tmp_path):
  # ram:// lives in the process: the binary's files go when it exits, so this checks that it
  # runs and writes nothing locally (the jobs' files are checked in-process above).
  # Started warm, in tmp_path (the package comes from its install, as the suite's servers' does).
  r = warm_binaries.run_python(
      ["-m", "albert_tf.run_pretraining", "--output_dir=ram://binary/out",
       f"--input_file={os.path.join(ORIGINAL_MODEL, 'eval.tfrecord')}",
       f"--albert_config_file={CONFIG}", "--train_batch_size=2", "--max_seq_length=24",
       "--max_predictions_per_seq=5", "--num_train_steps=2", "--save_checkpoints_steps=1",
       "--do_eval", "--max_eval_steps=1", "--eval_batch_size=3"],
      "training", cwd=tmp_path, timeout=300)
  assert r.returncode == 0, r.stderr[-3000:]
  assert "saved checkpoint ram://binary/out/model.ckpt-2" in r.stderr
  assert os.listdir(tmp_path) == []
