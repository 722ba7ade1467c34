"""run_pretraining against the original's 4 LAMB updates and eval metrics, on one device, two
mirrored CPU devices, two worker processes, with accumulation, XLA, mixed precision, and after a
SIGKILL."""

import json
import os
import signal
import subprocess
import time

import numpy as np
import pytest
import tensorflow as tf

import albert_tf
from albert_tf.checkpoints.layout import original_variable_map
from albert_tf.data.pipeline import pretraining_dataset
from albert_tf.optimization import Lamb
from albert_tf.core import settings
from albert_tf.training import pretraining
from albert_tf.training import runner as runners
import warm_binaries
from helpers import (ORIGINAL_MODEL, assert_same_checkpoint_values, run_binary,
                     run_workers)

CONFIG = os.path.join(ORIGINAL_MODEL, "albert_config.json")
FIXTURE_FLAGS = [
    f"--input_file={os.path.join(ORIGINAL_MODEL, 'train.tfrecord')}",
    f"--albert_config_file={CONFIG}",
    f"--init_checkpoint={os.path.join(ORIGINAL_MODEL, 'model.ckpt-0')}",
    "--train_batch_size=2", "--max_seq_length=24", "--max_predictions_per_seq=5",
    "--optimizer=lamb", "--learning_rate=0.01", "--num_train_steps=4", "--num_warmup_steps=2",
    "--iterations_per_loop=2", "--save_checkpoints_steps=4"]


def _run(flags, env=None, timeout=600, check=True):
  return run_binary("run_pretraining", flags, check, env, timeout)


def _assert_weights_equal_fixture_ckpt4(output_dir, atol=1e-5):
  model = albert_tf.AlbertPretrainer(albert_tf.AlbertConfig.from_json_file(CONFIG))
  albert_tf.load_checkpoint(model, output_dir)
  reader = tf.train.load_checkpoint(os.path.join(ORIGINAL_MODEL, "model.ckpt-4"))
  for name, var in original_variable_map(model).items():
    np.testing.assert_allclose(var.numpy(), reader.get_tensor(name), atol=atol, err_msg=name)


def _logged_losses(stderr):
  # Each line after absl's prefix ("I1201 10:00:00.000000 1234 runner.py:311] ").
  messages = [line.split("] ", 1)[-1] for line in stderr.splitlines()]
  return [float(m.split(" loss ")[1].split()[0]) for m in messages if m.startswith("step ")]


@pytest.mark.slow
@pytest.mark.parametrize("extra", [[], ["--strategy=mirrored", "--cpu_devices=2"],
                                   ["--gradient_accumulation_steps=2"], ["--jit_compile"]],
                         ids=["one_device", "mirrored_2_cpus", "accumulation_2", "xla"])
def test_four_updates_reproduce_the_original(extra, tmp_path):
  result = _run(FIXTURE_FLAGS + [f"--output_dir={tmp_path}"] + extra)
  if "--cpu_devices=2" in extra:
    assert "MirroredStrategy with 2 replicas" in result.stderr
  _assert_weights_equal_fixture_ckpt4(str(tmp_path))
  assert os.path.exists(tmp_path / "model.ckpt-4.index")
  assert any(f.startswith("events.out.tfevents") for f in os.listdir(tmp_path / "train"))


@pytest.mark.slow
def test_runner_losses_match_the_original_per_update():
  strategy = tf.distribute.get_strategy()
  config = albert_tf.AlbertConfig.from_json_file(CONFIG)
  model = albert_tf.AlbertPretrainer(config)
  runner = pretraining.PretrainingRunner(
      strategy, model, Lamb(), settings.TrainSettings(
          learning_rate=0.01, num_train_steps=4, num_warmup_steps=2,
          gradient_accumulation_steps=2))
  albert_tf.load_original_checkpoint(model, os.path.join(ORIGINAL_MODEL, "model.ckpt-0"))
  iterator = iter(pretraining_dataset(os.path.join(ORIGINAL_MODEL, "train.tfrecord"), 24, 5, 2,
                                      is_training=True))
  losses = [runner.train_steps(iterator, 1)["loss"] for _ in range(4)]
  expected = np.load(os.path.join(ORIGINAL_MODEL, "reference.npz"))["train_losses"][:4]
  np.testing.assert_allclose(losses, expected, atol=1e-5)


def test_eval_at_ckpt0_writes_the_original_metrics(tmp_path):
  _run([f"--input_file={os.path.join(ORIGINAL_MODEL, 'eval.tfrecord')}",
        f"--albert_config_file={CONFIG}", f"--output_dir={tmp_path}",
        f"--init_checkpoint={os.path.join(ORIGINAL_MODEL, 'model.ckpt-0')}", "--do_train=false",
        "--do_eval", "--eval_batch_size=3", "--max_eval_steps=1", "--max_seq_length=24",
        "--max_predictions_per_seq=5"])
  with open(tmp_path / "eval_results.txt") as f:
    written = dict(line.strip().split(" = ") for line in f)
  with open(os.path.join(ORIGINAL_MODEL, "train_settings.json")) as f:
    expected = json.load(f)["eval_metrics_at_ckpt_0"]
  for key, value in expected.items():
    assert abs(float(written[key]) - value) < 1e-5, key
  assert written["global_step"] == "0"




@pytest.mark.slow
def test_multi_worker_mirrored_two_processes(tmp_path):
  outputs = run_workers("run_pretraining", [f"--output_dir={tmp_path}",
                                            "--strategy=multi_worker_mirrored"] + FIXTURE_FLAGS)
  assert "with 2 replicas" in outputs[0] and "with 2 replicas" in outputs[1]
  _assert_weights_equal_fixture_ckpt4(str(tmp_path))
  assert not [f for f in os.listdir(tmp_path) if f.startswith(".worker")]


# The interrupted run: the job built from settings alone (no flags), paused by its after_save hook
# right after model.ckpt-4 so that the test can kill it there; its process set up as the binary's
# (running_job: TensorFlow's oneDNN kernels as the binary chooses them, before TensorFlow loads).
PAUSED_RUN = """
import sys, time
from albert_tf.core import onednn, settings
onednn.turn_on_for_training()
from albert_tf.tasks.pretraining.job import PretrainingJob
output_dir, original = sys.argv[1:]
job = PretrainingJob(settings.PretrainingSettings(
    output_dir=output_dir, input_file=original + "/eval.tfrecord", max_predictions_per_seq=5,
    model=settings.ModelSettings(albert_config_file=original + "/albert_config.json",
                                 init_checkpoint=original + "/model.ckpt-0", max_seq_length=24),
    run=settings.RunSettings(data_seed=11),
    train=settings.TrainSettings(train_batch_size=2, learning_rate=0.01, num_train_steps=6,
                                 num_warmup_steps=1, save_checkpoints_steps=2,
                                 iterations_per_loop=1)))
job.run(after_save=lambda step, path: time.sleep(600) if step == 4 else None)
"""


@pytest.mark.slow
def test_sigkill_after_a_checkpoint_then_resume_equals_uninterrupted(tmp_path):
  flags = [f"--input_file={os.path.join(ORIGINAL_MODEL, 'eval.tfrecord')}",
           f"--albert_config_file={CONFIG}", "--train_batch_size=2", "--max_seq_length=24",
           "--max_predictions_per_seq=5", "--learning_rate=0.01", "--num_train_steps=6",
           "--num_warmup_steps=1", "--save_checkpoints_steps=2", "--iterations_per_loop=1",
           "--data_seed=11", f"--init_checkpoint={os.path.join(ORIGINAL_MODEL, 'model.ckpt-0')}"]
  straight, interrupted = tmp_path / "straight", tmp_path / "interrupted"
  _run(flags + [f"--output_dir={straight}"])

  proc = warm_binaries.start_python(["-c", PAUSED_RUN, str(interrupted), ORIGINAL_MODEL],
                                    "training", stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL)
  deadline = time.time() + 300
  while not os.path.exists(interrupted / "model.ckpt-4.index"):
    assert proc.poll() is None and time.time() < deadline, "run ended before its checkpoint"
    time.sleep(0.2)
  proc.send_signal(signal.SIGKILL)
  proc.wait()
  assert not os.path.exists(interrupted / "model.ckpt-6.index")
  resumed = _run(flags + [f"--output_dir={interrupted}"])
  assert "resumed from" in resumed.stderr and "at step 4" in resumed.stderr
  assert "taking over the stale lock" in resumed.stderr

  assert_same_checkpoint_values(straight / "model.ckpt-6", interrupted / "model.ckpt-6")


@pytest.mark.slow
@pytest.mark.parametrize("policy", ["mixed_bfloat16", "mixed_float16"])
def test_mixed_precision_runs(policy, tmp_path):
  result = _run([f"--input_file={os.path.join(ORIGINAL_MODEL, 'eval.tfrecord')}",
                 f"--albert_config_file={CONFIG}", f"--output_dir={tmp_path}",
                 "--train_batch_size=3", "--max_seq_length=24", "--max_predictions_per_seq=5",
                 "--num_train_steps=3", "--num_warmup_steps=1", "--learning_rate=0.01",
                 f"--mixed_precision={policy}", "--jit_compile", "--iterations_per_loop=1"])
  losses = _logged_losses(result.stderr)
  assert len(losses) == 3 and all(np.isfinite(losses))
  assert abs(losses[0] - 7.5) < 0.3  # ~ln(1000) + ln(2), as in float32
  assert os.path.exists(tmp_path / "model.ckpt-3.index")


@pytest.mark.slow
def test_bad_flags(tmp_path):
  base = [f"--input_file={os.path.join(ORIGINAL_MODEL, 'eval.tfrecord')}",
          f"--albert_config_file={CONFIG}", f"--output_dir={tmp_path}"]
  r = _run(base + ["--max_seq_length=65"], check=False)
  assert r.returncode != 0 and "max_position_embeddings" in r.stderr
  r = _run(base + ["--max_seq_length=24", "--train_batch_size=3",
                   "--gradient_accumulation_steps=2"], check=False)
  assert r.returncode != 0 and "divisible" in r.stderr
  r = _run(base[1:] + ["--input_file=/nonexistent/x.tfrecord", "--max_seq_length=24"],
           check=False)
  assert r.returncode != 0 and "input file not found" in r.stderr


def test_corrupt_tfrecord_is_a_clear_error(tmp_path):
  with open(os.path.join(ORIGINAL_MODEL, "eval.tfrecord"), "rb") as f:
    data = bytearray(f.read())
  data[40] ^= 0xFF  # inside the first record: its data CRC no longer matches
  corrupt = tmp_path / "corrupt.tfrecord"
  corrupt.write_bytes(bytes(data))
  r = _run([f"--input_file={corrupt}", f"--albert_config_file={CONFIG}",
            f"--output_dir={tmp_path / 'out'}", "--train_batch_size=2", "--max_seq_length=24",
            "--max_predictions_per_seq=5", "--num_train_steps=2"], check=False)
  assert (r.returncode != 0 and "corrupt TFRecord data" in r.stderr
          and "corrupt.tfrecord" in r.stderr)


class _NanRunner:
  global_step = tf.Variable(0, dtype=tf.int64)

  def train_until_stopped(self, iterator, steps):
    self.global_step.assign_add(steps)
    return {"loss": float("nan"), "mlm_nll_sum": 0.0, "mlm_correct": 0.0, "mlm_weight": 1.0,
            "sop_nll_sum": 0.0, "sop_correct": 0.0, "examples": 1.0, "learning_rate": 0.1}, False


def test_nan_loss_stops_without_saving():
  saved = []

  class Manager:
    latest_checkpoint = "out/model.ckpt-2"

    def save(self, checkpoint_number):
      saved.append(checkpoint_number)

  train = settings.TrainSettings(num_train_steps=10, save_checkpoints_steps=2,
                                 iterations_per_loop=2)
  with pytest.raises(runners.NonFiniteLossError, match="model.ckpt-2"):
    runners.run_training(_NanRunner(), lambda step: None, Manager(), train)
  assert saved == []
