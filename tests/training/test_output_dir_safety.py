"""One run per output_dir (a lock naming its holder, stale locks taken over), no results from an
untrained fine-tuning model, and no leftovers of a save that a kill interrupted."""

import json
import logging
import os
import socket
import subprocess
import sys

import pytest

from albert_tf.training.lock import LOCK_NAME, OutputDirLock, OutputDirLockedError
from helpers import ORIGINAL_MODEL, REPO_ROOT, TESTDATA, run_binary

CONFIG = os.path.join(ORIGINAL_MODEL, "albert_config.json")
SPM = os.path.join(TESTDATA, "original_pretraining_data", "30k-clean-tiny.model")
FINETUNING = os.path.join(TESTDATA, "original_finetuning")
PRETRAINING = [f"--input_file={os.path.join(ORIGINAL_MODEL, 'eval.tfrecord')}",
               f"--albert_config_file={CONFIG}", "--train_batch_size=2", "--max_seq_length=24",
               "--max_predictions_per_seq=5", "--num_train_steps=1", "--num_warmup_steps=0"]
CLASSIFIER = [f"--spm_model_file={SPM}", f"--albert_config_file={CONFIG}", "--task_name=mrpc",
              f"--data_dir={os.path.join(FINETUNING, 'glue', 'glue_data')}",
              "--max_seq_length=48"]


def _dead_pid():
  proc = subprocess.Popen([sys.executable, "-c", "pass"])
  proc.wait()
  return proc.pid


def test_lock_names_its_live_holder_and_takes_over_a_dead_one(tmp_path, caplog):
  lock = OutputDirLock(str(tmp_path)).acquire()
  with pytest.raises(OutputDirLockedError, match=f"pid {os.getpid()} on host "
                     f"{socket.gethostname()}"):
    OutputDirLock(str(tmp_path)).acquire()
  lock.release()
  assert not os.path.exists(tmp_path / LOCK_NAME)

  (tmp_path / LOCK_NAME).write_text(json.dumps({"pid": _dead_pid(),
                                                "host": socket.gethostname()}))
  with caplog.at_level(logging.INFO, logger="albert_tf"):
    taken = OutputDirLock(str(tmp_path)).acquire()
  assert "taking over the stale lock" in caplog.records[0].getMessage()
  assert json.loads((tmp_path / LOCK_NAME).read_text())["pid"] == os.getpid()
  taken.release()

  # Held from another host: its process cannot be checked from here.
  (tmp_path / LOCK_NAME).write_text(json.dumps({"pid": _dead_pid(), "host": "elsewhere"}))
  with pytest.raises(OutputDirLockedError, match=f"host elsewhere.*delete {tmp_path}"):
    OutputDirLock(str(tmp_path)).acquire()


def test_a_reused_pid_is_not_the_holder(tmp_path):
  (tmp_path / LOCK_NAME).write_text(json.dumps({
      "pid": os.getpid(), "host": socket.gethostname(), "process_start": 1}))
  OutputDirLock(str(tmp_path)).acquire().release()


@pytest.mark.slow
def test_binaries_refuse_an_output_dir_in_use(tmp_path):
  holder = subprocess.Popen(
      [sys.executable, "-c", "import sys, time; from albert_tf.training.lock import "
       "OutputDirLock; OutputDirLock(sys.argv[1]).acquire(); print('held', flush=True); "
       "time.sleep(120)", str(tmp_path)], cwd=REPO_ROOT, stdout=subprocess.PIPE, text=True)
  try:
    assert holder.stdout.readline().strip() == "held"
    expected = f"is in use by another run: pid {holder.pid} on host {socket.gethostname()}"
    r = run_binary("run_pretraining", PRETRAINING + [f"--output_dir={tmp_path}"], check=False)
    assert r.returncode != 0 and expected in r.stderr, r.stderr[-2000:]
    r = run_binary("run_classifier", CLASSIFIER + [f"--output_dir={tmp_path}", "--do_train",
                                                   "--train_step=1"], check=False)
    assert r.returncode != 0 and expected in r.stderr, r.stderr[-2000:]
    assert sorted(os.listdir(tmp_path)) == [LOCK_NAME]
  finally:
    holder.kill()
    holder.wait()
  # The holder was killed: its lock is stale, and the next run takes it over.
  r = run_binary("run_pretraining", PRETRAINING + [f"--output_dir={tmp_path}"])
  assert "taking over the stale lock" in r.stderr
  assert os.path.exists(tmp_path / "model.ckpt-1.index")
  assert not os.path.exists(tmp_path / LOCK_NAME)  # released at exit


@pytest.mark.slow
def test_an_interrupted_save_is_cleaned_up_at_the_next_start(tmp_path):
  partial = tmp_path / "model.ckpt-4_temp"
  partial.mkdir()
  (partial / "part-00000-of-00001.data-00000-of-00001").write_bytes(b"\0" * 64)
  r = run_binary("run_pretraining", PRETRAINING + [f"--output_dir={tmp_path}"])
  assert f"removing {partial}" in r.stderr
  assert not partial.exists() and os.path.exists(tmp_path / "model.ckpt-1.index")


@pytest.mark.parametrize("binary,flags", [
    ("run_classifier", CLASSIFIER + ["--do_eval", "--do_predict"]),
    ("run_classifier", CLASSIFIER + ["--export_dir=EXPORT"]),
    ("run_race", [f"--spm_model_file={SPM}", f"--albert_config_file={CONFIG}",
                  f"--data_dir={os.path.join(FINETUNING, 'race')}", "--do_train=false",
                  "--do_eval", "--max_seq_length=64", "--max_qa_length=16"]),
    ("run_squad_v1", [f"--spm_model_file={SPM}", f"--albert_config_file={CONFIG}",
                      f"--predict_file={os.path.join(FINETUNING, 'squad', 'v1', 'dev.json')}",
                      "--do_predict", "--max_seq_length=64", "--max_query_length=16"]),
], ids=["classifier_eval_predict", "classifier_export", "race_eval", "squad_predict"])
@pytest.mark.slow
def test_untrained_models_are_not_evaluated_or_exported(binary, flags, tmp_path):
  out = tmp_path / "out"
  flags = [f.replace("EXPORT", str(tmp_path / "export")) for f in flags]
  r = run_binary(binary, flags + [f"--output_dir={out}"], check=False)
  assert r.returncode != 0
  assert "holds no checkpoint" in r.stderr and "--init_checkpoint is not set" in r.stderr
  assert not out.exists() and not (tmp_path / "export").exists()


@pytest.mark.slow
def test_resuming_with_another_config_is_refused(tmp_path):
  run_binary("run_pretraining", PRETRAINING + [f"--output_dir={tmp_path}"])
  bigger = tmp_path / "bigger.json"
  with open(CONFIG) as f:
    bigger.write_text(json.dumps(dict(json.load(f), inner_group_num=2)))
  r = run_binary("run_pretraining", [f for f in PRETRAINING if "albert_config" not in f] + [
      f"--albert_config_file={bigger}", f"--output_dir={tmp_path}", "--num_train_steps=2"],
                 check=False)
  assert r.returncode != 0 and "cannot resume from" in r.stderr and "albert_config" in r.stderr


def test_finetuning_refuses_a_tokenizer_larger_than_the_vocab(tmp_path):
  small = tmp_path / "small_vocab.json"
  with open(CONFIG) as f:
    small.write_text(json.dumps(dict(json.load(f), vocab_size=500)))
  flags = [f for f in CLASSIFIER if "albert_config" not in f]
  r = run_binary("run_classifier", flags + [f"--albert_config_file={small}", "--do_train",
                                            f"--output_dir={tmp_path / 'out'}"], check=False)
  assert r.returncode != 0
  assert "has 1000 pieces but the config" in r.stderr and "vocab_size 500" in r.stderr
  assert not (tmp_path / "out").exists()


def test_resuming_another_tasks_checkpoint_is_refused(tmp_path):
  import albert_tf
  import tensorflow as tf
  from albert_tf.optimization import create_optimizer
  from albert_tf.core.settings import TrainSettings
  from albert_tf.training import checkpointing, runner as runners
  from albert_tf.training.pretraining import PretrainingObjective
  config = albert_tf.AlbertConfig.from_json_file(CONFIG)
  strategy = tf.distribute.get_strategy()
  pretrainer = albert_tf.AlbertPretrainer(config)
  runner = runners.Runner(strategy, pretrainer, create_optimizer("lamb"), TrainSettings(),
                          PretrainingObjective())
  checkpointing.checkpoint_manager(runner.checkpoint(), str(tmp_path), 1).save(900)

  classifier = albert_tf.AlbertClassifier(config, 2)
  other = runners.Runner(strategy, classifier, create_optimizer("lamb"), TrainSettings(),
                         PretrainingObjective())
  with pytest.raises(ValueError, match="cannot resume from .*model.ckpt-900: it lacks "
                     "output_bias, output_weights"):
    checkpointing.restore_or_initialize(other.checkpoint(), classifier, str(tmp_path), None)
  assert int(other.global_step.numpy()) == 0
