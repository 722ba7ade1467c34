"""Preemption: SIGTERM mid-call saves the step reached and exits 42; the restarted run ends
bit-identical to an uninterrupted one (dropout on, fixed and dynamic masks, two workers,
run_classifier with its evaluations). A corrupt latest checkpoint falls back to the previous;
record counts are cached."""

import json
import logging
import os
import signal
import subprocess

import numpy as np
import pytest
import tensorflow as tf

import albert_tf
from albert_tf.training import checkpointing
from albert_tf.training.preemption import PREEMPTED_EXIT_CODE
from helpers import ORIGINAL_MODEL, TESTDATA, cluster_environments, run_binary, start_binary

RECORDS = os.path.join(TESTDATA, "original_pretraining_data", "expected.tfrecord")
SPM = os.path.join(TESTDATA, "original_pretraining_data", "30k-clean-tiny.model")
FINETUNING = os.path.join(TESTDATA, "original_finetuning")


def _dropout_config(directory):
  with open(os.path.join(ORIGINAL_MODEL, "albert_config.json")) as f:
    config = dict(json.load(f), hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1)
  path = os.path.join(directory, "dropout_config.json")
  with open(path, "w") as f:
    json.dump(config, f)
  return path


def _pretraining_flags(directory, output_dir):
  return [f"--input_file={RECORDS}", f"--albert_config_file={_dropout_config(directory)}",
          f"--output_dir={output_dir}", "--train_batch_size=4", "--max_seq_length=64",
          "--max_predictions_per_seq=10", "--num_train_steps=40", "--num_warmup_steps=5",
          "--save_checkpoints_steps=25", "--learning_rate=0.01", "--random_seed=3",
          "--data_seed=5"]


def _start(module, flags, env=None):
  """The run, its stderr a pipe, from a warm start (helpers.start_binary): it takes signals as a
  fresh process does."""
  return start_binary(module, flags, env=env, stderr=subprocess.PIPE)


def _signal_after(proc, text, signum):
  """Sends `signum` once a stderr line holds `text`; returns the whole stderr (after exit)."""
  lines = []
  for line in proc.stderr:
    lines.append(line)
    if text in line and signum is not None:
      proc.send_signal(signum)
      signum = None
  proc.wait(timeout=600)
  return "".join(lines)


def _run(module, flags):
  """A run that is sent no signal (helpers.run_binary); returns its stderr."""
  return run_binary(module, flags).stderr


def _assert_same_state(prefix_a, prefix_b):
  """Every variable of two of our checkpoints is bit-identical, save_counter aside (a preempted
  run saves once more)."""
  a, b = tf.train.load_checkpoint(str(prefix_a)), tf.train.load_checkpoint(str(prefix_b))
  names = [n for n in a.get_variable_to_shape_map()
           if "VARIABLE_VALUE" in n and not n.startswith("save_counter")]
  assert len(names) > 30 and any(n.startswith("dropout_seeds") for n in names)
  for name in names:
    np.testing.assert_array_equal(a.get_tensor(name), b.get_tensor(name), err_msg=name)


def _preempted_step(err):
  # absl's prefix (severity, time, file) comes before the albert_tf logger's message.
  [line] = [l for l in err.splitlines() if "preempted: saved" in l]
  return int(line.split("preempted: saved")[1].split(" at step ")[1].split(";")[0])


@pytest.mark.slow
@pytest.mark.parametrize("masks", [[], ["--masked_lm_budget=0.15"]],
                         ids=["fixed_masks", "dynamic_masks"])
def test_sigterm_mid_call_saves_the_step_and_resumes_exactly(masks, tmp_path):
  straight, interrupted = tmp_path / "straight", tmp_path / "interrupted"
  _run("run_pretraining", _pretraining_flags(tmp_path, straight) + masks)

  # The second call (steps 26 to 40) is running or about to: SIGTERM stops it at a step boundary.
  proc = _start("run_pretraining", _pretraining_flags(tmp_path, interrupted) + masks)
  err = _signal_after(proc, "model.ckpt-25", signal.SIGTERM)
  assert proc.returncode == PREEMPTED_EXIT_CODE, err[-3000:]
  step = _preempted_step(err)
  assert 25 < step < 40
  assert tf.train.latest_checkpoint(str(interrupted)).endswith(f"model.ckpt-{step}")
  assert not os.path.exists(interrupted / "albert_tf.lock")
  assert os.listdir(interrupted / "train")  # its summaries

  resumed = _run("run_pretraining", _pretraining_flags(tmp_path, interrupted) + masks)
  assert f"at step {step}" in resumed
  _assert_same_state(straight / "model.ckpt-40", interrupted / "model.ckpt-40")


@pytest.mark.slow
def test_two_workers_sigterm_one_both_save_the_same_step(tmp_path):
  def start_pair(output_dir):
    return [_start("run_pretraining", _pretraining_flags(tmp_path, output_dir) + [
        "--strategy=multi_worker_mirrored"], env) for env in cluster_environments(2)]

  def finish(procs, signalled=None):
    errs = [None, None]
    if signalled is not None:
      errs[signalled] = _signal_after(procs[signalled], "model.ckpt-25", signal.SIGTERM)
    return [err or _signal_after(p, "", None) for p, err in zip(procs, errs)]

  straight, interrupted = tmp_path / "straight", tmp_path / "interrupted"
  procs = start_pair(straight)
  for p, err in zip(procs, finish(procs)):
    assert p.returncode == 0, err[-3000:]
  procs = start_pair(interrupted)
  errs = finish(procs, signalled=1)  # the non-chief worker
  for p, err in zip(procs, errs):
    assert p.returncode == PREEMPTED_EXIT_CODE, err[-3000:]
  step = _preempted_step(errs[0])
  assert _preempted_step(errs[1]) == step and 25 < step < 40
  assert tf.train.latest_checkpoint(str(interrupted)).endswith(f"model.ckpt-{step}")
  procs = start_pair(interrupted)
  for p, err in zip(procs, finish(procs)):
    assert p.returncode == 0, err[-3000:]
  _assert_same_state(straight / "model.ckpt-40", interrupted / "model.ckpt-40")


@pytest.mark.slow
def test_run_classifier_killed_then_preempted_ends_as_uninterrupted(tmp_path):
  def flags(output_dir):
    return [f"--spm_model_file={SPM}",
            f"--albert_config_file={os.path.join(ORIGINAL_MODEL, 'albert_config.json')}",
            "--task_name=mrpc", f"--data_dir={os.path.join(FINETUNING, 'glue', 'glue_data')}",
            f"--output_dir={output_dir}", "--max_seq_length=48", "--do_train", "--do_eval",
            "--train_batch_size=4", "--save_checkpoints_steps=10", "--train_step=30",
            "--learning_rate=1e-3", "--warmup_step=2", "--random_seed=2", "--data_seed=3",
            f"--init_checkpoint={os.path.join(FINETUNING, 'classifier', 'mrpc', 'model.ckpt-0')}"]

  straight, interrupted = tmp_path / "straight", tmp_path / "interrupted"
  _run("run_classifier", flags(straight))
  # SIGKILL right after model.ckpt-10 is saved, before its evaluation: evaluated at restart.
  proc = _start("run_classifier", flags(interrupted))
  _signal_after(proc, "saved checkpoint", signal.SIGKILL)
  proc = _start("run_classifier", flags(interrupted))
  err = _signal_after(proc, "model.ckpt-20", signal.SIGTERM)
  assert proc.returncode == PREEMPTED_EXIT_CODE, err[-3000:]
  _run("run_classifier", flags(interrupted))

  _assert_same_state(straight / "model.ckpt-30", interrupted / "model.ckpt-30")
  for name in ("eval_results.txt", "best_trial.txt"):
    assert (interrupted / name).read_text() == (straight / name).read_text(), name
  best = [tf.train.load_checkpoint(str(d / "model.ckpt-best")) for d in (straight, interrupted)]
  for name in best[0].get_variable_to_shape_map():  # the original's TF1 layout
    np.testing.assert_array_equal(best[0].get_tensor(name), best[1].get_tensor(name), name)


def _saved_runner_checkpoints(directory):
  model = albert_tf.AlbertPretrainer(albert_tf.AlbertConfig.from_json_file(
      os.path.join(ORIGINAL_MODEL, "albert_config.json")))
  step = tf.Variable(0, dtype=tf.int64)
  checkpoint = tf.train.Checkpoint(**albert_tf.checkpoints.layout.model_parts(model),
                                   global_step=step)
  manager = checkpointing.checkpoint_manager(checkpoint, directory, 5)
  for value in (2, 4):
    step.assign(value)
    manager.save(checkpoint_number=value)
  return checkpoint, model


def test_corrupt_latest_checkpoint_falls_back_to_the_previous(tmp_path, caplog):
  checkpoint, model = _saved_runner_checkpoints(str(tmp_path))
  data = tmp_path / "model.ckpt-4.data-00000-of-00001"
  data.write_bytes(data.read_bytes()[:100])  # truncated
  caplog.set_level(logging.INFO, logger="albert_tf")
  path = checkpointing.restore_or_initialize(checkpoint, model, str(tmp_path), None)
  assert path == str(tmp_path / "model.ckpt-2") and int(checkpoint.global_step.numpy()) == 2
  logged = [r.getMessage() for r in caplog.records]
  assert any("model.ckpt-2" in line and "model.ckpt-4" in line for line in logged), logged

  (tmp_path / "model.ckpt-2.index").write_bytes(b"not an index")
  with pytest.raises(ValueError, match="no readable checkpoint"):
    checkpointing.restore_or_initialize(checkpoint, model, str(tmp_path), None)


@pytest.mark.slow
def test_dynamic_masks_are_fixed_by_the_seeds():
  from albert_tf.data.pipeline import DynamicMasking, pretraining_dataset

  def first_batches(seed):
    d = pretraining_dataset(RECORDS, 64, 10, 8, True, dynamic=DynamicMasking(vocab_size=1000),
                            seed=seed)
    return [b["input_ids"].numpy() for b in d.take(3)]

  np.testing.assert_array_equal(first_batches(7), first_batches(7))
  assert not np.array_equal(first_batches(7)[0], first_batches(8)[0])


def test_record_counts_are_cached_until_a_file_changes(tmp_path, caplog):
  from albert_tf.data import epochs

  def write(path, count):
    with tf.io.TFRecordWriter(str(path)) as writer:
      for _ in range(count):
        writer.write(b"x")
    return str(path)

  files = [write(tmp_path / "a.tfrecord", 3), write(tmp_path / "b.tfrecord", 4)]
  caplog.set_level(logging.INFO, logger="albert_tf")
  logged = lambda: [r.getMessage() for r in caplog.records]
  cache = str(tmp_path / "counts.json")
  assert epochs.cached_record_count(files, cache) == 7
  with open(cache) as f:
    assert json.load(f)[files[0]]["records"] == 3
  assert epochs.cached_record_count(files, cache) == 7 and not logged()
  write(tmp_path / "b.tfrecord", 5)
  os.utime(files[1], ns=(1, 1))  # another time, whatever the clock's resolution
  assert epochs.cached_record_count(files, cache) == 8
  assert len(logged()) == 1 and "b.tfrecord changed" in logged()[0]
