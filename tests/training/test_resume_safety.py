"""A resume is never silent: without the checkpoint state file a run resumes from the newest
model.ckpt-* (the earlier run's checkpoints kept bit for bit, no evaluation twice), a changed
config is refused naming its fields, and SIGTERM in the final evaluation exits 42 with the lock
released, the evaluation done at the restart."""

import json
import os
import shutil
import signal
import subprocess

import pytest
import tensorflow as tf

from albert_tf.core import errors
from albert_tf.core.config import AlbertConfig
from albert_tf.training import checkpointing
from albert_tf.training.job import CONFIG_FILE, config_differences
from albert_tf.training.lock import LOCK_NAME
from albert_tf.training.preemption import PREEMPTED_EXIT_CODE
from helpers import (ORIGINAL_MODEL, TESTDATA, assert_same_checkpoint_values, run_binary,
                     start_binary)

CONFIG = os.path.join(ORIGINAL_MODEL, "albert_config.json")
SPM = os.path.join(TESTDATA, "original_pretraining_data", "30k-clean-tiny.model")
FINETUNING = os.path.join(TESTDATA, "original_finetuning")
# Unseeded (no --random_seed): a run started afresh would write other weights.
PRETRAINING = [f"--input_file={os.path.join(ORIGINAL_MODEL, 'eval.tfrecord')}",
               "--train_batch_size=2", "--max_seq_length=24", "--max_predictions_per_seq=5",
               "--num_warmup_steps=0", "--save_checkpoints_steps=1"]


def _pretraining(output_dir, steps, config=CONFIG, extra=()):
  return PRETRAINING + [f"--albert_config_file={config}", f"--output_dir={output_dir}",
                        f"--num_train_steps={steps}"] + list(extra)


def _one_error_line(result):
  assert "Traceback" not in result.stderr, result.stderr[-3000:]
  lines = [l for l in result.stderr.splitlines() if l.startswith("error:")]
  assert len(lines) == 1, result.stderr[-3000:]
  return lines[0]


def _copy_checkpoints(source, target, steps):
  target.mkdir()
  for step in steps:
    for path in source.glob(f"model.ckpt-{step}.*"):
      shutil.copy(path, target / path.name)


@pytest.mark.slow
def test_a_deleted_state_file_resumes_from_the_newest_checkpoint(tmp_path):
  out = tmp_path / "out"
  run_binary("run_pretraining", _pretraining(out, 3))
  _copy_checkpoints(out, tmp_path / "first", (1, 2, 3))
  os.remove(out / "checkpoint")

  r = run_binary("run_pretraining", _pretraining(out, 4))
  assert f"the checkpoint state file {out / 'checkpoint'} is missing" in r.stderr
  assert f"resumed from {out / 'model.ckpt-3'} at step 3" in r.stderr
  for step in (1, 2, 3):  # the first run's, untouched
    assert_same_checkpoint_values(tmp_path / "first" / f"model.ckpt-{step}",
                                  out / f"model.ckpt-{step}")
  state = tf.train.get_checkpoint_state(str(out))
  assert [os.path.basename(p) for p in state.all_model_checkpoint_paths] == [
      f"model.ckpt-{step}" for step in (1, 2, 3, 4)]
  assert tf.train.load_checkpoint(str(out / "model.ckpt-4")).get_tensor(
      "global_step/.ATTRIBUTES/VARIABLE_VALUE") == 4


def test_a_save_never_overwrites_a_readable_checkpoint_it_did_not_write(tmp_path):
  tf.train.Checkpoint(v=tf.Variable(1.0)).write(str(tmp_path / "model.ckpt-5"))  # another run's
  (tmp_path / "model.ckpt-6.index").write_bytes(b"not an index")  # unreadable: nothing to keep
  manager = checkpointing.checkpoint_manager(tf.train.Checkpoint(v=tf.Variable(2.0)),
                                             str(tmp_path), 5)
  with pytest.raises(errors.CheckpointError, match="model.ckpt-5 exists and this run did not "
                     "write it.*use a new --output_dir"):
    manager.save(checkpoint_number=5)
  assert tf.train.load_checkpoint(str(tmp_path / "model.ckpt-5")).get_tensor(
      "v/.ATTRIBUTES/VARIABLE_VALUE") == 1.0
  for step in (6, 7):
    manager.save(checkpoint_number=step)
    assert tf.train.load_checkpoint(str(tmp_path / f"model.ckpt-{step}")).get_tensor(
        "v/.ATTRIBUTES/VARIABLE_VALUE") == 2.0


@pytest.mark.slow
def test_a_classifier_rerun_without_the_state_file_evaluates_nothing_twice(tmp_path):
  out = tmp_path / "out"
  flags = [f"--spm_model_file={SPM}", f"--albert_config_file={CONFIG}", "--task_name=mrpc",
           f"--data_dir={os.path.join(FINETUNING, 'glue', 'glue_data')}",
           f"--output_dir={out}", "--max_seq_length=48", "--do_train", "--do_eval",
           "--train_batch_size=4", "--save_checkpoints_steps=2", "--train_step=4",
           "--learning_rate=1e-3", "--warmup_step=1",
           f"--init_checkpoint={os.path.join(FINETUNING, 'classifier', 'mrpc', 'model.ckpt-0')}"]
  run_binary("run_classifier", flags)
  results = (out / "eval_results.txt").read_text()
  assert results.count("global_step = ") == 2
  _copy_checkpoints(out, tmp_path / "first", (2, 4))
  os.remove(out / "checkpoint")

  r = run_binary("run_classifier", flags)
  assert f"resumed from {out / 'model.ckpt-4'} at step 4" in r.stderr
  assert "initialised from" not in r.stderr
  assert (out / "eval_results.txt").read_text() == results
  for step in (2, 4):
    assert_same_checkpoint_values(tmp_path / "first" / f"model.ckpt-{step}",
                                  out / f"model.ckpt-{step}")


@pytest.mark.slow
def test_a_changed_config_is_refused_naming_its_fields(tmp_path):
  out = tmp_path / "out"
  run_binary("run_pretraining", _pretraining(out, 1))
  with open(CONFIG) as f:
    given = json.load(f)
  assert not config_differences(AlbertConfig.from_json_file(str(out / CONFIG_FILE)),
                                AlbertConfig.from_dict(given))

  # An output_dir from before the config was kept resumes, and keeps it from then on.
  os.remove(out / CONFIG_FILE)
  r = run_binary("run_pretraining", _pretraining(out, 2))
  assert "resumed from" in r.stderr and f"no {CONFIG_FILE}" in r.stderr
  assert AlbertConfig.from_json_file(str(out / CONFIG_FILE)).to_dict() == given

  changed = tmp_path / "relu.json"
  changed.write_text(json.dumps(dict(given, hidden_act="relu", hidden_dropout_prob=0.3)))
  r = run_binary("run_pretraining", _pretraining(out, 3, config=changed), check=False)
  assert r.returncode == 1, r.stderr[-3000:]
  line = _one_error_line(r)
  assert "hidden_act 'relu' (was 'gelu')" in line and "hidden_dropout_prob 0.3 (was 0)" in line
  assert "--albert_config_file" in line and "--output_dir" in line
  assert not (out / "model.ckpt-3.index").exists() and not (out / LOCK_NAME).exists()


@pytest.mark.slow
def test_sigterm_in_the_final_evaluation_exits_42_and_the_restart_evaluates(tmp_path):
  out = tmp_path / "out"
  # An evaluation far longer than the test: only the signal ends it.
  flags = _pretraining(out, 2, extra=["--do_eval", "--eval_batch_size=2",
                                      "--max_eval_steps=10000000"])
  proc = start_binary("run_pretraining", flags, stderr=subprocess.PIPE)
  lines = []
  for line in proc.stderr:
    lines.append(line)
    if "Running evaluation" in line:
      proc.send_signal(signal.SIGTERM)
  proc.wait(timeout=300)
  err = "".join(lines)
  assert proc.returncode == PREEMPTED_EXIT_CODE, err[-3000:]
  assert "preempted during the evaluation at step 2" in err
  assert not (out / LOCK_NAME).exists()
  assert tf.train.latest_checkpoint(str(out)).endswith("model.ckpt-2")
  assert not (out / "eval_results.txt").exists()

  r = run_binary("run_pretraining", flags[:-1] + ["--max_eval_steps=3"])
  assert "resumed from" in r.stderr and "at step 2" in r.stderr
  assert "global_step = 2\n" in (out / "eval_results.txt").read_text()
