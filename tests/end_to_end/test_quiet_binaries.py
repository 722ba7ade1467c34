"""A normal run of each binary prints nothing that reads like a failure: no `E0000` line, no
traceback, none of the notices users reported (NOISE), on the fixture model (max_position_embeddings
64: where no --max_seq_length is given, the default's cap is exercised too). The fine-tuning
binaries are checked on the runs their own test files check (tests/conftest.py), the others on
runs of one or two steps here."""

import os
from pathlib import Path

import pytest

from helpers import ORIGINAL_MODEL, TESTDATA, TF_STARTUP_NOTICES, run_binary

# What users saw on runs that went well, and TensorFlow's start-up notices.
NOISE = (
    "E0000", "Traceback",
    "prism", "Falling back to DirectRunner", "apitools not found", "Discarding unparseable args",
    "semi_persistent_directory",
    "Ignoring Assert operator",
    "contains input name(s)",
    "Sharding callback duration",
    "update_checkpoint_state", "deprecat",
) + tuple(TF_STARTUP_NOTICES.values())

SPM = os.path.join(TESTDATA, "original_pretraining_data", "30k-clean-tiny.model")
CONFIG = os.path.join(ORIGINAL_MODEL, "albert_config.json")
MODEL = [f"--spm_model_file={SPM}", f"--albert_config_file={CONFIG}",
         f"--init_checkpoint={os.path.join(ORIGINAL_MODEL, 'model.ckpt-0')}"]


def assert_quiet(result, what):
  """`result` (a finished subprocess) succeeded and its stderr has no NOISE line."""
  assert result.returncode == 0, (what, result.stderr[-3000:])
  noisy = [line for line in result.stderr.splitlines() if any(n in line for n in NOISE)]
  assert not noisy, (what, noisy)


def binary_runs(tmp_path):
  """The binaries no other test file runs in full: {chain: [(what, flags)]}, each chain's runs
  in order (the later read what the earlier wrote), the chains independent of each other."""
  corpus = os.path.join(TESTDATA, "original_pretraining_data", "corpus.txt")
  records = tmp_path / "records" / "corpus.txt.tfrecord"
  data_flags = [f"--input_file={corpus}", f"--spm_model_file={SPM}", "--vocab_file=unused",
                "--max_seq_length=64", "--max_predictions_per_seq=10", "--dupe_factor=1"]
  return {
      "pretraining": [
          ("create_pretraining_data", data_flags + [f"--output_file={records.parent}/"]),
          ("run_pretraining", [
              f"--input_file={records}", f"--output_dir={tmp_path / 'pre'}",
              f"--albert_config_file={CONFIG}", "--max_predictions_per_seq=10",
              "--train_batch_size=4", "--num_train_steps=2", "--num_warmup_steps=1",
              "--save_checkpoints_steps=1", "--jit_compile", "--do_eval", "--max_eval_steps=1",
              f"--init_checkpoint={ORIGINAL_MODEL}"]),
          ("export_checkpoints", [f"--albert_config_file={CONFIG}", f"--spm_model_file={SPM}",
                                  f"--init_checkpoint={tmp_path / 'pre'}",
                                  f"--export_path={tmp_path / 'released'}"])],
      "beam": [("create_pretraining_data --beam_pipeline_options", data_flags + [
          f"--output_file={tmp_path / 'beam'}/", "--beam_pipeline_options=--runner=DirectRunner"])],
      "export_saved_model": [("export_saved_model", MODEL + [
          "--max_seq_length=32", f"--export_dir={tmp_path / 'sm'}"])],
      "run_ner": [("run_ner", [
          f"--spm_model_file={SPM}", f"--data_dir={os.path.join(TESTDATA, 'ner')}",
          f"--albert_config_file={os.path.join(TESTDATA, 'ner', 'albert_config_tiny.json')}",
          f"--output_dir={tmp_path / 'ner'}", "--max_seq_length=64", "--doc_stride=32",
          "--train_batch_size=16", "--train_step=1", "--do_train", "--do_eval"])],
      "export_tflite": [("export_tflite", MODEL[1:] + [
          "--max_seq_length=32", f"--output_file={tmp_path / 'm.tflite'}"])],
      "export_onnx": [("export_onnx", MODEL[1:] + [
          "--max_seq_length=32", f"--output_file={tmp_path / 'm.onnx'}"])],
  }


# One test per chain of runs (binary_runs only names paths under its directory), so that
# pytest-xdist's workers share them out.
@pytest.mark.slow
@pytest.mark.parametrize("chain", list(binary_runs(Path("unused"))))
def test_each_binary_runs_quietly(chain, tmp_path):
  """The binaries no other test file runs in full; see the tests below."""
  for what, flags in binary_runs(tmp_path)[chain]:
    assert_quiet(run_binary(what.split()[0], flags, check=False, cold=True), what)


# The runs that tests/test_run_{classifier,squad,race}.py check (tests/conftest.py: each once per
# session), here for their stderr: training, evaluation, prediction and exports. One test per
# run, so that each goes to the pytest-xdist worker that runs its fixture's other tests.
@pytest.mark.slow
def test_classifier_run_is_quiet(classifier_fine_tuned):
  assert_quiet(classifier_fine_tuned.result, "run_classifier")


@pytest.mark.slow
@pytest.mark.parametrize("version", ["v1", "v2"])
def test_squad_runs_are_quiet(version, squad_trained):
  assert_quiet(squad_trained(version).result, f"run_squad_{version}")


@pytest.mark.slow
def test_race_run_is_quiet(race_trained):
  assert_quiet(race_trained.result, "run_race")
