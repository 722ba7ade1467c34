"""run_race end to end on the fixture: the original's features, evaluation of each checkpoint,
model.ckpt-best, and the test-set results."""

import os
import shutil

import pytest
import tensorflow as tf

from helpers import ORIGINAL_MODEL, TESTDATA, run_binary
from tfrecord_utils import read_examples

RACE = os.path.join(TESTDATA, "original_finetuning", "race")
SPM = os.path.join(TESTDATA, "original_pretraining_data", "30k-clean-tiny.model")


def _run(flags, check=True):
  return run_binary("run_race", [
      f"--data_dir={RACE}", f"--spm_model_file={SPM}",
      f"--albert_config_file={os.path.join(ORIGINAL_MODEL, 'albert_config.json')}"] + flags, check)


@pytest.mark.slow
def test_train_eval_predict(race_trained):
  out = race_trained.out  # tests/conftest.py: 4 steps, evaluated at 2 and 4, then the test set
  for ours, split in ((out / "race_train.tf_record", "train"), (race_trained.data, "dev"),
                      (out / "race_test.tf_record", "test")):
    assert read_examples(str(ours)) == read_examples(
        os.path.join(RACE, f"expected_{split}.tfrecord")), split
  with open(out / "eval_results.txt") as f:
    blocks = [dict(line.split(" = ") for line in b.strip().splitlines())
              for b in f.read().split("=" * 50)[:-1]]
  assert [int(b["global_step"]) for b in blocks] == [2, 4]
  # Each block's best counts its own accuracy; no block is the starting checkpoint.
  accuracies = [float(b["eval_accuracy"]) for b in blocks]
  assert [float(b["best"]) for b in blocks] == [accuracies[0], max(accuracies)]
  assert not any("checkpoint" in b for b in blocks)
  with open(out / "predict_results.txt") as f:
    results = dict(line.split(" = ") for line in f.read().splitlines()[1:])
  assert 0.0 <= float(results["eval_accuracy"]) <= 1.0
  assert float(results["best"]) == max(accuracies)  # the best dev accuracy, as the original
  reader = tf.train.load_checkpoint(str(out / "model.ckpt-best"))
  assert reader.get_tensor("output_weights").shape == (1, 32)
  with open(out / "test_results.tsv") as f:
    rows = [[float(x) for x in line.split("\t")] for line in f]
  assert len(rows) == 14 and all(abs(sum(r) - 1) < 1e-5 and len(r) == 4 for r in rows)


@pytest.mark.slow  # four runs of the binary
def test_bad_flags(tmp_path):
  r = _run([f"--output_dir={tmp_path}", "--max_seq_length=32", "--max_qa_length=30"],
           check=False)
  assert r.returncode != 0 and "max_qa_length" in r.stderr
  r = _run([f"--output_dir={tmp_path}", "--max_seq_length=64", "--task_name=mnli"], check=False)
  assert r.returncode != 0 and "Task not found" in r.stderr


def test_an_empty_dev_set_fails_before_training(tmp_path):
  shutil.copytree(os.path.join(RACE, "RACE", "train"), tmp_path / "RACE" / "train")
  for level in ("middle", "high"):
    (tmp_path / "RACE" / "dev" / level).mkdir(parents=True)
  out = tmp_path / "out"
  r = run_binary("run_race", [
      f"--data_dir={tmp_path}", f"--spm_model_file={SPM}",
      f"--albert_config_file={os.path.join(ORIGINAL_MODEL, 'albert_config.json')}",
      f"--output_dir={out}", "--max_seq_length=64", "--max_qa_length=16", "--train_step=4"],
                 check=False, timeout=300)
  assert r.returncode != 0
  assert f"no RACE questions in {tmp_path / 'RACE' / 'dev'}" in r.stderr
  assert "Running training" not in r.stderr
  assert not out.exists()  # the data is checked before output_dir is even created
