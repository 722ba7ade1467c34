"""A binary ends a usage error, a lock refusal or a missing data file with one line on stderr
(`error: ...`; status 2 for usage, 1 for a failed run), and no traceback unless asked."""

import os

import pytest
from absl import app

from albert_tf.core import cli
from albert_tf.training.lock import OutputDirLock, OutputDirLockedError
from albert_tf.training.job import UsageError
from helpers import ORIGINAL_MODEL, REPO_ROOT, run_binary


def test_exit_codes_by_kind():
  assert cli.exit_code(UsageError("x")) == cli.exit_code(app.UsageError("x")) == 2
  assert cli.exit_code(OutputDirLockedError("x")) == 1
  assert cli.exit_code(FileNotFoundError(2, "No such file or directory", "a/b.tsv")) == 1
  assert cli.exit_code(ValueError("a bug")) is None  # keeps its traceback
  assert cli.message(FileNotFoundError(2, "No such file", "a/b.tsv")) == (
      "no such file or directory: a/b.tsv")
  assert cli.message(UsageError("two\n  lines")) == "two lines"


def _one_line(result, code, logged_before=False):
  """The `error: ...` line that ends `result`'s stderr, alone there unless the run logged
  before it failed; status `code`, no traceback."""
  assert result.returncode == code, result.stderr[-3000:]
  lines = result.stderr.strip().splitlines()
  assert lines[-1].startswith("error: ") and "Traceback" not in result.stderr, result.stderr
  assert logged_before or len(lines) == 1, result.stderr[-3000:]
  return lines[-1]


@pytest.mark.parametrize("flags, message", [
    (["--output_dir=x"], "error: flag --input_file=None: Flag --input_file must have a value"),
    (["--input_file=x", "--output_dir=x", "--nosuch_flag"], "Unknown command line flag"),
    (["--input_file=x", "--output_dir=x", "--train_batch_size=many"], "train_batch_size"),
])
def test_bad_flags_end_in_one_line(flags, message):
  assert message in _one_line(run_binary("run_pretraining", flags, check=False), 2)


def test_traceback_on_request():
  result = run_binary("run_pretraining", ["--output_dir=x"], check=False,
                      env={cli.TRACEBACK_VARIABLE: "1"})
  assert result.returncode != 0 and "Traceback" in result.stderr


@pytest.mark.slow
def test_usage_error_lock_and_missing_file_end_in_one_line(tmp_path):
  records = os.path.join(REPO_ROOT, "tests", "testdata", "original_pretraining_data",
                         "expected.tfrecord")
  spm = os.path.join(os.path.dirname(records), "30k-clean-tiny.model")
  config = os.path.join(ORIGINAL_MODEL, "albert_config.json")  # max_position_embeddings 64
  flags = [f"--input_file={records}", f"--albert_config_file={config}", "--num_train_steps=1",
           "--train_batch_size=2", "--max_predictions_per_seq=10"]
  line = _one_line(run_binary("run_pretraining", flags + [
      f"--output_dir={tmp_path / 'a'}", "--max_seq_length=512"], check=False), 2, True)
  assert "--max_seq_length=512" in line and "max_position_embeddings" in line
  held = tmp_path / "held"
  held.mkdir()
  lock = OutputDirLock(str(held)).acquire()
  try:
    line = _one_line(run_binary("run_pretraining", flags + [f"--output_dir={held}"],
                                check=False), 1, True)
    assert str(os.getpid()) in line
  finally:
    lock.release()
  line = _one_line(run_binary("run_classifier", [
      "--task_name=MRPC", f"--data_dir={tmp_path}", f"--output_dir={tmp_path / 'c'}",
      "--do_train", f"--albert_config_file={config}", f"--spm_model_file={spm}"],
      check=False), 2)
  assert os.path.join(str(tmp_path), "MRPC", "train.tsv") in line
  assert line.startswith(f"error: --data_dir={tmp_path}: data file not found")
