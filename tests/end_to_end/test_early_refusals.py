"""A missing data file, an unknown task and a missing checkpoint are refused as the flags are: one
`error: --flag...` line, exit status 2, before TensorFlow loads (core.path_checks). Each binary
runs with a `tensorflow` package on PYTHONPATH that raises when imported: a refusal that comes
only after TensorFlow loads ends in that package's traceback instead of the one line."""

import os
import subprocess
import sys

import pytest

from albert_tf.core import path_checks
from helpers import ORIGINAL_MODEL, REPO_ROOT, TESTDATA

CONFIG = os.path.join(ORIGINAL_MODEL, "albert_config.json")
PREFIX = os.path.join(ORIGINAL_MODEL, "model.ckpt-0")
SPM = os.path.join(TESTDATA, "original_pretraining_data", "30k-clean-tiny.model")
GLUE_DATA = os.path.join(TESTDATA, "original_finetuning", "glue", "glue_data")
RACE_DATA = os.path.join(TESTDATA, "original_finetuning", "race")
HF_DIRECTORY = os.path.join(TESTDATA, "hf_albert", "classifier")
MODEL = [f"--albert_config_file={CONFIG}", f"--spm_model_file={SPM}"]
_BLOCKED = "tensorflow was imported"


@pytest.fixture(scope="module")
def no_tensorflow(tmp_path_factory):
  """A PYTHONPATH entry whose `tensorflow` package raises on import (RuntimeError: no
  `except ImportError` takes it for an optional dependency)."""
  root = tmp_path_factory.mktemp("no_tensorflow")
  (root / "tensorflow").mkdir()
  (root / "tensorflow" / "__init__.py").write_text(f"raise RuntimeError({_BLOCKED!r})\n")
  return str(root)


def _refusal(no_tensorflow, binary, flags):
  """(exit status, stderr lines) of `python -m albert_tf.<binary> <flags>`, TensorFlow
  blocked."""
  path = os.pathsep.join([no_tensorflow, REPO_ROOT] + [p for p in [os.environ.get("PYTHONPATH")]
                                                       if p])
  result = subprocess.run([sys.executable, "-m", f"albert_tf.{binary}"] + flags, cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, PYTHONPATH=path))
  return result.returncode, result.stderr.splitlines()


def _assert_refused(no_tensorflow, binary, flags, *expected):
  code, lines = _refusal(no_tensorflow, binary, flags)
  assert not any(_BLOCKED in line for line in lines), "\n".join(lines[-20:])
  assert code == 2 and len(lines) == 1 and lines[0].startswith("error: "), "\n".join(lines)
  for text in expected:
    assert text in lines[0], lines[0]
  return lines[0]


def test_missing_data_files_are_refused_before_tensorflow(no_tensorflow, tmp_path):
  missing = str(tmp_path / "missing")
  out = f"--output_dir={tmp_path / 'out'}"
  _assert_refused(no_tensorflow, "run_classifier",
                  ["--task_name=mrpc", f"--data_dir={missing}", "--do_eval", out] + MODEL,
                  f"--data_dir={missing}: data file not found: "
                  f"{os.path.join(missing, 'MRPC', 'dev.tsv')}")
  # Only the files of the modes asked for: --dev_file is not read without --do_eval.
  _assert_refused(no_tensorflow, "run_classifier",
                  [f"--train_file={missing}.csv", f"--dev_file={missing}_dev.csv", "--do_train",
                   out] + MODEL,
                  f"--train_file: data file not found: {missing}.csv")
  _assert_refused(no_tensorflow, "run_race",
                  [f"--data_dir={missing}", "--max_seq_length=64", out] + MODEL,
                  f"--data_dir={missing}: directory not found: "
                  f"{os.path.join(missing, 'RACE', 'train', 'middle')}")
  # The CoNLL folder is there, without the test split's file (GLUE's folder holds none).
  _assert_refused(no_tensorflow, "run_ner",
                  [f"--data_dir={GLUE_DATA}", "--do_predict", out] + MODEL,
                  f"no test file in --data_dir={GLUE_DATA}: expected test.txt or eng.testb")
  _assert_refused(no_tensorflow, "run_squad_v1",
                  [f"--predict_file={missing}.json", "--do_predict", out] + MODEL,
                  f"--predict_file: data file not found: {missing}.json")
  _assert_refused(no_tensorflow, "run_squad_v2",
                  [f"--train_file={missing}.json", "--do_train", out] + MODEL,
                  f"--train_file: data file not found: {missing}.json")
  _assert_refused(no_tensorflow, "run_pretraining",
                  [f"--input_file={ORIGINAL_MODEL}/train.tfrecord,{missing}*.tfrecord", out,
                   f"--albert_config_file={CONFIG}"],
                  f"--input_file: input file not found: {missing}*.tfrecord")
  _assert_refused(no_tensorflow, "create_pretraining_data",
                  [f"--input_file={missing}.txt", f"--output_file={tmp_path / 'o.tfrecord'}",
                   f"--spm_model_file={SPM}"],
                  f"--input_file: input file not found: {missing}.txt")
  _assert_refused(no_tensorflow, "export_onnx",
                  [f"--init_checkpoint={PREFIX}", "--quantize=static",
                   f"--calibration_data={missing}.tfrecord",
                   f"--output_file={tmp_path / 'model.onnx'}"],
                  f"--calibration_data: data file not found: {missing}.tfrecord")


def test_unknown_task_names_are_refused_before_tensorflow(no_tensorflow, tmp_path):
  out = f"--output_dir={tmp_path / 'out'}"
  _assert_refused(no_tensorflow, "run_classifier",
                  ["--task_name=nope", f"--data_dir={GLUE_DATA}", "--do_eval", out] + MODEL,
                  "--task_name=nope: Task not found: nope (known: ax, cola,")
  _assert_refused(no_tensorflow, "run_race",
                  ["--task_name=mnli", f"--data_dir={RACE_DATA}", "--max_seq_length=64", out]
                  + MODEL, "--task_name=mnli: Task not found: mnli")


@pytest.mark.parametrize("binary, flags", [
    ("run_classifier", ["--task_name=MRPC", f"--data_dir={GLUE_DATA}", "--do_eval"] + MODEL),
    ("run_pretraining", [f"--input_file={ORIGINAL_MODEL}/train.tfrecord",
                         f"--albert_config_file={CONFIG}"]),
    ("export_checkpoints", [f"--albert_config_file={CONFIG}"]),
    ("export_tfhub", MODEL),
    ("export_tflite", []),
    ("export_onnx", []),
])
def test_a_missing_checkpoint_is_refused_before_tensorflow(no_tensorflow, tmp_path, binary,
                                                           flags):
  missing = str(tmp_path / "run" / "model.ckpt-5")
  output = {"run_classifier": "--output_dir", "run_pretraining": "--output_dir",
            "export_checkpoints": "--export_path", "export_tfhub": "--export_path"}.get(
                binary, "--output_file")
  _assert_refused(no_tensorflow, binary,
                  [f"--init_checkpoint={missing}", f"{output}={tmp_path / 'out'}"] + flags,
                  f"--init_checkpoint={missing}: checkpoint not found: {missing}")


def test_a_directory_or_a_file_that_is_no_checkpoint_is_refused(no_tensorflow, tmp_path):
  out = f"--output_dir={tmp_path / 'out'}"
  flags = ["--task_name=MRPC", f"--data_dir={GLUE_DATA}", "--do_eval", out] + MODEL
  _assert_refused(no_tensorflow, "run_classifier", [f"--init_checkpoint={GLUE_DATA}"] + flags,
                  f"no checkpoint found in directory {GLUE_DATA}")
  _assert_refused(no_tensorflow, "run_classifier",
                  [f"--init_checkpoint={PREFIX}.index"] + flags,
                  f"is one of a checkpoint's files: give its prefix, {PREFIX}")
  _assert_refused(no_tensorflow, "export_checkpoints",
                  [f"--albert_directory={tmp_path}", f"--export_path={tmp_path / 'out'}"],
                  f"--albert_directory={tmp_path} --checkpoint_name=model.ckpt-best: "
                  "checkpoint not found")


def test_every_checkpoint_form_passes_the_check(tmp_path):
  assert path_checks.checkpoint_problem(PREFIX) is None
  assert path_checks.checkpoint_problem(ORIGINAL_MODEL) is None  # its `checkpoint` file
  assert path_checks.checkpoint_problem(HF_DIRECTORY) is None
  assert path_checks.checkpoint_problem(os.path.join(HF_DIRECTORY, "model.safetensors")) is None
  run = tmp_path / "run"
  run.mkdir()
  (run / "model.ckpt-best.index").write_bytes(b"")  # a fine-tuning output_dir
  assert path_checks.checkpoint_problem(str(run)) is None
  preset = tmp_path / "preset"
  preset.mkdir()
  (preset / "model.weights.h5").write_bytes(b"")  # a keras-hub preset: its reader checks it
  assert path_checks.checkpoint_problem(str(preset)) is None
  # A remote path needs TensorFlow's file system: the checkpoint readers check it.
  assert path_checks.checkpoint_problem("gs://bucket/no/model.ckpt-1") is None
  assert path_checks.checkpoint_problem(None) is None
  lone = tmp_path / "lone"
  lone.mkdir()
  (lone / "model.ckpt-7.index").write_bytes(b"")
  problem = path_checks.checkpoint_problem(str(lone))
  assert f"it holds model.ckpt-7: give one of them as {lone / 'model.ckpt-7'}" in problem


def test_the_directory_markers_are_the_readers_file_names():
  from albert_tf.checkpoints import hf, keras_hub, original
  assert path_checks.BEST_CHECKPOINT_INDEX == original.BEST_CHECKPOINT + ".index"
  assert path_checks.HF_WEIGHTS == (hf.WEIGHTS_NAME, hf._INDEX_NAME)
  assert {keras_hub.CONFIG_NAME, keras_hub.WEIGHTS_NAME, keras_hub.METADATA_NAME} == set(
      path_checks.KERAS_HUB_FILES)


@pytest.mark.parametrize("flag", ["albert_config_file", "spm_model_file", "vocab_file"])
def test_a_missing_model_or_tokenizer_file_is_refused_before_tensorflow(no_tensorflow, tmp_path,
                                                                        flag):
  missing = str(tmp_path / "missing.file")
  given = {"albert_config_file": CONFIG, "spm_model_file": SPM, "vocab_file": None}
  given[flag] = missing
  if flag == "vocab_file":  # a WordPiece vocabulary is read without a SentencePiece model only
    given["spm_model_file"] = None
  _assert_refused(no_tensorflow, "run_classifier",
                  ["--task_name=mrpc", f"--data_dir={GLUE_DATA}", "--do_eval",
                   f"--output_dir={tmp_path / 'out'}"] +
                  [f"--{name}={value}" for name, value in given.items() if value],
                  f"--{flag}={missing}: file not found: {missing}")
  if flag != "spm_model_file":  # the original's convention: --vocab_file=unused beside one
    code, lines = _refusal(no_tensorflow, "create_pretraining_data", [
        f"--input_file={os.path.join(REPO_ROOT, 'data', 'sample', 'corpus.txt')}",
        f"--output_file={tmp_path / 'out.tfrecord'}", f"--spm_model_file={SPM}",
        "--vocab_file=unused", "--max_seq_length=2"])
    assert code == 2 and lines[-1].startswith("error: --max_seq_length=2"), lines
  _assert_refused(no_tensorflow, "export_saved_model",
                  [f"--{flag}={tmp_path}", f"--init_checkpoint={PREFIX}",
                   f"--export_dir={tmp_path / 'export'}"],
                  f"--{flag}={tmp_path}: {tmp_path} is a directory: give the file itself")
