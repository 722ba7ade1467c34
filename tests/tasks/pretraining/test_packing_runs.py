"""run_pretraining --pack_sequences: evaluation reports the unpacked metrics on the same records;
training on packed rows updates alike on one device, two mirrored devices, with gradient
accumulation and with XLA, and resumes exactly."""

import os

import numpy as np
import pytest

from albert_tf.core import settings
from albert_tf.tasks.pretraining.job import PretrainingJob
from helpers import ORIGINAL_MODEL, assert_same_checkpoint_values, run_binary, run_workers
from packing_records import make_records, short_lengths, write_records

CONFIG = os.path.join(ORIGINAL_MODEL, "albert_config.json")  # vocab 1000, 64 positions
INIT = os.path.join(ORIGINAL_MODEL, "model.ckpt-0")
T, P = 64, 10


@pytest.fixture(name="records", scope="module")
def fixture_records(tmp_path_factory):
  path = tmp_path_factory.mktemp("records") / "short.tfrecord"
  write_records(path, make_records(short_lengths(200, T, 11), T, P, 11, vocab_size=1000))
  return str(path)


def _eval_results(path):
  with open(path) as f:
    return {k: float(v) for k, v in (line.strip().split(" = ") for line in f)}


@pytest.mark.slow
def test_evaluation_packed_reports_the_unpacked_metrics(records, tmp_path):
  flags = [f"--input_file={records}", f"--albert_config_file={CONFIG}", f"--init_checkpoint={INIT}",
           "--do_train=false", "--do_eval", "--eval_batch_size=8", "--max_eval_steps=5",
           f"--max_seq_length={T}", f"--max_predictions_per_seq={P}"]
  results = {}
  for name, extra in (("unpacked", []), ("packed", ["--pack_sequences",
                                                    "--max_sequences_per_row=3"])):
    result = run_binary("run_pretraining", flags + extra + [f"--output_dir={tmp_path / name}"])
    assert ("packing up to 3 sequences into each row of 64 tokens" in result.stderr) == (
        name == "packed")
    results[name] = _eval_results(tmp_path / name / "eval_results.txt")
  assert results["packed"].keys() == results["unpacked"].keys()
  for key, value in results["unpacked"].items():
    # Float32, the same sequences in rows of other neighbours: 1e-5.
    np.testing.assert_allclose(results["packed"][key], value, atol=1e-5, err_msg=key)


def _job(out, records, steps, **train):
  return PretrainingJob(settings.PretrainingSettings(
      output_dir=str(out), input_file=records, max_predictions_per_seq=P, pack_sequences=True,
      max_sequences_per_row=3,
      model=settings.ModelSettings(albert_config_file=CONFIG, max_seq_length=T,
                                   init_checkpoint=INIT),
      run=settings.RunSettings(random_seed=1, data_seed=4, **train.pop("run", {})),
      train=settings.TrainSettings(train_batch_size=4, num_train_steps=steps, num_warmup_steps=1,
                                   learning_rate=0.01, save_checkpoints_steps=2,
                                   iterations_per_loop=1, **train)))


class _Interrupted(Exception):
  pass


def _interrupt_at(step):
  def after_save(saved, _):
    if saved == step:
      raise _Interrupted
  return after_save


@pytest.mark.slow
def test_packed_training_resumes_exactly(records, tmp_path):
  _job(tmp_path / "straight", records, 6).run()
  with pytest.raises(_Interrupted):
    _job(tmp_path / "resumed", records, 6).run(after_save=_interrupt_at(2))
  _job(tmp_path / "resumed", records, 6).run()
  # The resume skipped rows, counted from the file's packed rows.
  assert "packed_rows_T64_K3_W256" in (tmp_path / "resumed" / "record_counts.json").read_text()
  assert_same_checkpoint_values(str(tmp_path / "straight" / "model.ckpt-6"),
                                str(tmp_path / "resumed" / "model.ckpt-6"))


@pytest.mark.slow
@pytest.mark.parametrize("extra", [["--strategy=mirrored", "--cpu_devices=2"],
                                   ["--gradient_accumulation_steps=2"], ["--jit_compile"]],
                         ids=["mirrored_2_cpus", "accumulation_2", "xla"])
def test_packed_updates_equal_one_device(extra, records, tmp_path):
  flags = [f"--input_file={records}", f"--albert_config_file={CONFIG}", f"--init_checkpoint={INIT}",
           "--pack_sequences", "--max_sequences_per_row=3", "--train_batch_size=4",
           "--num_train_steps=3", "--num_warmup_steps=1", "--learning_rate=0.01",
           "--save_checkpoints_steps=3", "--iterations_per_loop=3", "--data_seed=4",
           f"--max_seq_length={T}", f"--max_predictions_per_seq={P}"]
  run_binary("run_pretraining", flags + [f"--output_dir={tmp_path / 'one'}"])
  result = run_binary("run_pretraining", flags + extra + [f"--output_dir={tmp_path / 'other'}"])
  if "--cpu_devices=2" in extra:
    assert "MirroredStrategy with 2 replicas" in result.stderr
  # Float32 sums in other orders (per replica, per micro-batch, XLA's fusions): 1e-5.
  assert_same_checkpoint_values(str(tmp_path / "one" / "model.ckpt-3"),
                                str(tmp_path / "other" / "model.ckpt-3"), atol=1e-5)


@pytest.mark.slow
def test_packed_training_on_two_workers(records, tmp_path):
  outputs = run_workers("run_pretraining", [
      f"--output_dir={tmp_path}", "--strategy=multi_worker_mirrored", f"--input_file={records}",
      f"--albert_config_file={CONFIG}", f"--init_checkpoint={INIT}", "--pack_sequences",
      "--train_batch_size=4", "--num_train_steps=4", "--num_warmup_steps=1",
      "--iterations_per_loop=2", "--save_checkpoints_steps=4", "--data_seed=4",
      f"--max_seq_length={T}", f"--max_predictions_per_seq={P}"])
  for err in outputs:
    assert "with 2 replicas" in err and "packing up to 4 sequences" in err
  assert os.path.exists(tmp_path / "model.ckpt-4.index")
