"""Refusals that every binary shares, each one `error:` line naming the flag or the file: flag
values out of their bounds (cli.FLAG_BOUNDS) and empty output paths, before any work; a directory
where a file is needed, a path under a file; a file that is no SentencePiece model given as
--spm_model_file, a SentencePiece .vocab given as --vocab_file; a cloud path that cannot be
reached."""

import os
import shutil
import subprocess
import sys

import pytest
from absl import flags

from albert_tf.core import cli, errors
from albert_tf.tokenization import FullTokenizer
from helpers import ORIGINAL_MODEL, REPO_ROOT, TESTDATA, run_binary

SPM = os.path.join(TESTDATA, "original_pretraining_data", "30k-clean-tiny.model")
CONFIG = os.path.join(ORIGINAL_MODEL, "albert_config.json")
OWN = os.path.join(TESTDATA, "own_data")


def _one_error_line(result, code):
  assert result.returncode == code, result.stderr[-2000:]
  lines = [line for line in result.stderr.splitlines() if line.startswith("error:")]
  assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr[-2000:]
  return lines[0]


# ---- flag values -----------------------------------------------------------------------------
def _flag_values(**defined):
  values = flags.FlagValues()
  for name, default in defined.items():
    define = flags.DEFINE_float if isinstance(default, float) else (
        flags.DEFINE_string if isinstance(default, str) or default is None
        else flags.DEFINE_integer)
    define(name, default, "", flag_values=values)
  return values


@pytest.mark.parametrize("argv, expected", [
    (["--train_batch_size=0"], "--train_batch_size=0: must be at least 1"),
    (["--train_step=-5"], "--train_step=-5: must be at least 1 (the number of updates"),
    (["--warmup_step=-1"], "--warmup_step=-1: must be at least 0 (0: no warmup)"),
    (["--learning_rate=nan"], "--learning_rate=nan: must be at least 0.0"),
    (["--learning_rate=inf"], "--learning_rate=inf: must be at least 0.0"),
    (["--warmup_proportion=1.5"], "--warmup_proportion=1.5: must be between 0.0 and 1.0"),
    (["--output_dir="], "--output_dir is empty: give a path"),
    (["--output_dir= "], "--output_dir is empty: give a path"),
])
def test_flag_values_out_of_bounds_are_refused(argv, expected):
  values = _flag_values(train_batch_size=32, train_step=10, warmup_step=0, learning_rate=1e-3,
                        warmup_proportion=0.1, output_dir=None, undefined_elsewhere=3)
  values(["binary"] + argv)
  with pytest.raises(flags.IllegalFlagValueError) as raised:
    cli.check_flag_values(values)
  assert str(raised.value).startswith(expected)
  assert cli.exit_code(raised.value) == errors.USAGE_EXIT_CODE


def test_flag_values_at_their_bounds_pass():
  values = _flag_values(train_batch_size=1, train_step=1, warmup_step=0, learning_rate=0.0,
                        warmup_proportion=1.0, keep_checkpoint_max=0, output_dir=None)
  values(["binary"])
  cli.check_flag_values(values)  # defaults at the bounds, output_dir not given
  values(["binary", "--output_dir=out"])
  cli.check_flag_values(values)


@pytest.mark.parametrize("binary, flag, expected", [
    ("run_classifier", "--train_batch_size=0", "--train_batch_size=0: must be at least 1"),
    ("run_classifier", "--output_dir=", "--output_dir is empty"),
    ("run_pretraining", "--train_batch_size=0", "--train_batch_size=0: must be at least 1"),
    ("run_squad_v1", "--num_train_epochs=-1", "--num_train_epochs=-1.0: must be at least 0.0"),
    ("run_ner", "--learning_rate=nan", "--learning_rate=nan: must be at least 0.0"),
    ("run_race", "--predict_batch_size=0", "--predict_batch_size=0: must be at least 1"),
])
def test_the_binaries_refuse_bad_values_before_any_work(binary, flag, expected, tmp_path):
  out = tmp_path / "out"
  given = {"output_dir": f"--output_dir={out}", "input_file": f"--input_file={tmp_path}/x",
           "train_file": f"--train_file={tmp_path}/train.csv"}
  argv = [given["output_dir"]] if not flag.startswith("--output_dir") else []
  if binary == "run_pretraining":
    argv.append(given["input_file"])
  if binary == "run_classifier":
    argv.append(given["train_file"])
  if binary in ("run_ner", "run_race"):
    argv.append(f"--data_dir={tmp_path}")
  argv += [f"--albert_config_file={CONFIG}", f"--spm_model_file={SPM}", "--do_train", flag]
  # From an empty working directory: an empty --output_dir would write there.
  work = tmp_path / "cwd"
  work.mkdir()
  result = subprocess.run([sys.executable, "-m", f"albert_tf.{binary}", *argv], cwd=work,
                          capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, PYTHONPATH=REPO_ROOT))
  line = _one_error_line(result, errors.USAGE_EXIT_CODE)
  assert expected in line, line
  assert os.listdir(work) == [] and not out.exists()


# ---- paths -----------------------------------------------------------------------------------
@pytest.mark.parametrize("error, expected", [
    (IsADirectoryError(21, "Is a directory", "data/train.csv"),
     "data/train.csv is a directory where a file is needed: give a file's path"),
    (NotADirectoryError(20, "Not a directory", "notes.txt/out"),
     "notes.txt/out: a part of this path is a file, not a directory"),
    (PermissionError(13, "Permission denied", "/root/x"), "permission denied: /root/x"),
    (FileExistsError(17, "File exists", "out"), "out exists already"),
    (FileNotFoundError(2, "No such file", "a.csv"), "no such file or directory: a.csv"),
])
def test_file_system_errors_are_one_line_naming_the_path(error, expected):
  assert cli.exit_code(error) == errors.FAILED_RUN_EXIT_CODE
  assert cli.message(error).startswith(expected)


def test_a_directory_as_a_data_file_and_an_output_under_a_file(tmp_path):
  notes, folder = tmp_path / "notes.txt", tmp_path / "train.csv"
  notes.write_text("not a directory\n")
  folder.mkdir()
  common = [f"--albert_config_file={CONFIG}", f"--spm_model_file={SPM}", "--do_train",
            "--train_step=1", "--max_seq_length=32", "--nomemory_check"]
  line = _one_error_line(run_binary("run_classifier", common + [
      f"--train_file={folder}", f"--output_dir={tmp_path / 'out'}"], check=False),
                         errors.FAILED_RUN_EXIT_CODE)
  assert f"{folder} is a directory where a file is needed" in line, line
  line = _one_error_line(run_binary("run_classifier", common + [
      f"--train_file={os.path.join(OWN, 'train.jsonl')}", "--label_column=labels",
      f"--output_dir={notes}/out"], check=False), errors.FAILED_RUN_EXIT_CODE)
  assert f"{notes}/out: a part of this path is a file, not a directory" in line, line


# ---- tokenizer files -------------------------------------------------------------------------
def _sentencepiece_vocab(path):
  """A SentencePiece .vocab at `path`: its pieces with scores (the file users confuse with the
  model, and with a WordPiece vocab.txt)."""
  path.write_text("<pad>\t0\n<unk>\t0\n[CLS]\t0\n\u2581the\t-3.1\n", encoding="utf-8")
  return path


def test_a_file_that_is_no_sentencepiece_model_is_refused_naming_it(tmp_path):
  bad = _sentencepiece_vocab(tmp_path / "spm.vocab")
  with pytest.raises(errors.DataFormatError, match=(
      f"{bad} is not a SentencePiece model \\(a .vocab file lists the pieces; the model is the "
      ".model file beside it\\): give --spm_model_file the .model file")):
    FullTokenizer(spm_model_file=str(bad))
  # The in-graph tokenizer of the exports checks it too, before TensorFlow's op sees it.
  from albert_tf.tokenization.in_graph import InGraphTokenizer
  with pytest.raises(errors.DataFormatError, match="is not a SentencePiece model"):
    InGraphTokenizer(str(bad))


def test_a_sentencepiece_vocab_as_vocab_file_is_refused_naming_it(tmp_path):
  vocab = _sentencepiece_vocab(tmp_path / "30k-clean.vocab")
  with pytest.raises(errors.DataFormatError, match=(
      f"{vocab} is not a WordPiece vocab.txt: it has no \\[UNK\\] token: it looks like a "
      "SentencePiece .vocab")):
    FullTokenizer(vocab_file=str(vocab))


@pytest.mark.slow
def test_the_binary_refuses_a_bad_spm_model_in_one_line(tmp_path):
  bad = tmp_path / "model.txt"
  shutil.copy(CONFIG, bad)
  line = _one_error_line(run_binary("run_classifier", [
      f"--train_file={os.path.join(OWN, 'train.jsonl')}", "--label_column=labels",
      f"--output_dir={tmp_path / 'out'}", f"--albert_config_file={CONFIG}",
      f"--spm_model_file={bad}", "--do_train", "--train_step=1", "--max_seq_length=32"],
                                    check=False), errors.FAILED_RUN_EXIT_CODE)
  assert f"{bad} is not a SentencePiece model" in line, line
  assert not (tmp_path / "out").exists()


# ---- cloud paths -----------------------------------------------------------------------------
def test_an_unreachable_cloud_path_is_one_line_with_the_fix():
  import tensorflow as tf
  error = tf.errors.PermissionDeniedError(
      None, None, "Error executing an HTTP request: HTTP response code 401 with body "
      "'Anonymous caller does not have storage.objects.get access'\n\t when reading metadata "
      "of gs://bucket/run/checkpoint")
  assert cli.exit_code(error) == errors.FAILED_RUN_EXIT_CODE
  line = cli.message(error)
  assert line.startswith("cannot use gs://bucket/run/checkpoint: Error executing an HTTP "
                         "request: HTTP response code 401"), line
  assert "gcloud auth application-default login" in line and "\n" not in line
  # A TensorFlow error on a local path is no user error of this kind: it keeps its traceback.
  assert cli.exit_code(tf.errors.InternalError(None, None, "a kernel failed")) is None
