"""A binary run from the suite's warm start (tests/warm_binaries.py) is the run a fresh
interpreter makes: the same checkpoint, bit for bit, the same exit status and error line. Which
runs go cold is decided by can_run_warm."""

import os

import pytest

import warm_binaries
from helpers import (ORIGINAL_MODEL, TESTDATA, assert_same_checkpoint_values, run_binary)

SPM = os.path.join(TESTDATA, "original_pretraining_data", "30k-clean-tiny.model")
GLUE = os.path.join(TESTDATA, "original_finetuning", "glue", "glue_data")


def _classifier(output_dir, *extra):
  return [f"--spm_model_file={SPM}",
          f"--albert_config_file={os.path.join(ORIGINAL_MODEL, 'albert_config.json')}",
          "--task_name=mrpc", f"--data_dir={GLUE}", f"--output_dir={output_dir}",
          "--max_seq_length=32", "--do_train", "--train_batch_size=4", "--train_step=3",
          "--warmup_step=1", "--save_checkpoints_steps=3", "--learning_rate=1e-3",
          "--random_seed=1", *extra]


@pytest.mark.slow
def test_a_warm_run_trains_as_a_fresh_interpreter(tmp_path):
  """Same flags and seeds: the warm and the cold run end with bit-identical weights (one
  process each, the same kernels: the training server turns oneDNN on as the binary does)."""
  warm = run_binary("run_classifier", _classifier(tmp_path / "warm", "--data_seed=7"))
  cold = run_binary("run_classifier", _classifier(tmp_path / "cold", "--data_seed=7"), cold=True)
  assert warm.returncode == cold.returncode == 0
  assert_same_checkpoint_values(tmp_path / "warm" / "model.ckpt-3", tmp_path / "cold" /
                                "model.ckpt-3")


def test_a_refusal_reads_the_same_warm_and_cold(tmp_path):
  flags = _classifier(tmp_path / "out") + ["--max_seq_length=65"]
  warm = run_binary("run_classifier", flags, check=False)
  cold = run_binary("run_classifier", flags, check=False, cold=True)
  lines = [[l for l in r.stderr.splitlines() if l.startswith("error:")] for r in (warm, cold)]
  assert warm.returncode == cold.returncode == 2
  assert lines[0] == lines[1] and len(lines[0]) == 1, (warm.stderr[-2000:], cold.stderr[-2000:])


def test_what_runs_cold():
  env = dict(os.environ)
  assert warm_binaries.can_run_warm("run_classifier", ["--do_train"], env)
  assert warm_binaries.can_run_warm("export_saved_model", [], env)
  assert not warm_binaries.can_run_warm("run_classifier", ["--help"], env)
  assert not warm_binaries.can_run_warm("create_pretraining_data", [], env)  # runs without TF
  assert not warm_binaries.can_run_warm("run_classifier", [], dict(env, TF_ENABLE_ONEDNN_OPTS="0"))
  assert not warm_binaries.can_run_warm("run_classifier", [], dict(env, PYTHONPATH="/elsewhere"))
  assert warm_binaries.can_run_warm("run_classifier", [], dict(env, ALBERT_SOMETHING="1"))
