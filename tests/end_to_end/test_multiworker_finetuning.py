"""Fine-tuning under MultiWorkerMirroredStrategy: only the chief writes the cached features, and
the other workers wait for them (strategy.barrier) instead of reading a file not written yet.
Two worker processes on the CPU, as test_run_pretraining's multi-worker test."""

import os
import subprocess

import pytest
import tensorflow as tf

from albert_tf.training import strategy as strategies
import warm_binaries
from helpers import ORIGINAL_MODEL, TESTDATA, cluster_environments

SPM = os.path.join(TESTDATA, "original_pretraining_data", "30k-clean-tiny.model")
CONFIG = os.path.join(ORIGINAL_MODEL, "albert_config.json")
# A classifier checkpoint of the fixture model (2 labels, as SST-2).
CHECKPOINT = os.path.join(TESTDATA, "original_finetuning", "classifier", "mrpc", "model.ckpt-0")
CHIEF_DELAY_S = 6

# run_classifier whose chief starts writing features CHIEF_DELAY_S late, so that the other worker
# reaches its read of them first: without a barrier it would find no file.
SLOW_CHIEF = """
import runpy, sys, time
from albert_tf.tasks.classifier import job as classifier_job
convert, delay = classifier_job.ClassifierJob.convert, float(sys.argv[1])

def slow_convert(self, examples, path):
  time.sleep(delay)
  convert(self, examples, path)

classifier_job.ClassifierJob.convert = slow_convert
sys.argv = ["run_classifier"] + sys.argv[2:]
runpy.run_module("albert_tf.run_classifier", run_name="__main__", alter_sys=True)
"""

# The chief fails to write: every worker must stop with an error, none wait forever.
FAILING_CHIEF = """
import tensorflow as tf
from albert_tf.training import strategy as strategies
strategy = tf.distribute.MultiWorkerMirroredStrategy()

def write():
  raise ValueError("no space left")
try:
  strategies.run_on_chief(strategy, write, "features.tf_record")
except Exception as e:
  print(f"{type(e).__name__}: {e}")
"""




def _two_workers(args, flavor, timeout=240):
  """Runs `python <args>` as worker 0 (the chief) and worker 1 of a localhost cluster, side by
  side from the warm start of `flavor` (warm_binaries.start_python); returns
  [(returncode, stdout, stderr)], killing both if either runs past `timeout`."""
  procs = [warm_binaries.start_python(args, flavor, env=dict(os.environ, **env),
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE)
           for env in cluster_environments(2)]
  try:
    outputs = [p.communicate(timeout=timeout) for p in procs]
  except subprocess.TimeoutExpired:
    for p in procs:
      p.kill()
    outputs = [p.communicate() for p in procs]
    pytest.fail(f"the workers ran past {timeout} s; worker 1's log ends:\n"
                f"{outputs[1][1][-3000:]}")
  return [(p.returncode, out, err) for p, (out, err) in zip(procs, outputs)]


def _tiny_sst2(directory):
  os.makedirs(os.path.join(directory, "SST-2"))
  for split, n in (("dev", 16), ("test", 6)):
    with open(os.path.join(directory, "SST-2", f"{split}.tsv"), "w", encoding="utf-8") as f:
      f.write("index\tsentence\n" if split == "test" else "sentence\tlabel\n")
      for i in range(n):
        f.write(f"{i}\tthe cat number {i} sat\n" if split == "test"
                else f"the cat number {i} sat\t{i % 2}\n")


@pytest.mark.slow
def test_the_other_worker_waits_for_the_chiefs_features(tmp_path):
  _tiny_sst2(str(tmp_path / "glue"))
  out = tmp_path / "out"
  results = _two_workers([
      "-c", SLOW_CHIEF, str(CHIEF_DELAY_S), "--task_name=SST-2", f"--data_dir={tmp_path / 'glue'}",
      f"--output_dir={out}", f"--spm_model_file={SPM}", f"--albert_config_file={CONFIG}",
      f"--init_checkpoint={CHECKPOINT}", "--max_seq_length=16", "--do_eval", "--do_predict",
      "--eval_batch_size=8", "--predict_batch_size=8", "--train_batch_size=2",
      "--strategy=multi_worker_mirrored"], "training")
  for index, (returncode, _, err) in enumerate(results):
    assert returncode == 0, f"worker {index}:\n{err[-3000:]}"
    assert "with 2 replicas" in err
  chief_log, other_log = results[0][2], results[1][2]
  assert "wrote 16 dev features (16 real)" in chief_log and "wrote 6 test features" in chief_log
  assert "features (" not in other_log  # it read the chief's files
  with open(out / "eval_results.txt") as f:
    results = dict(line.split(" = ") for line in f.read().splitlines()[:-1])
  assert int(results["global_step"]) == 0 and 0.0 <= float(results["eval_accuracy"]) <= 1.0
  # The chief's block: the starting checkpoint, labelled so, and the best that counts it.
  assert results["checkpoint"] == "<init>" and results["best"] == results["eval_accuracy"]
  with open(out / "test_results.tsv") as f:
    assert len(f.read().splitlines()) == 6
  assert len(list(tf.data.TFRecordDataset(str(out / "sst-2_eval.tf_record")))) == 16


@pytest.mark.slow
def test_a_chief_that_fails_to_write_stops_every_worker():
  results = _two_workers(["-c", FAILING_CHIEF], "serving", timeout=120)
  assert [r[0] for r in results] == [0, 0]
  assert results[0][1].splitlines()[-1] == "ValueError: no space left"
  assert results[1][1].splitlines()[-1] == (
      "RuntimeError: the chief worker failed to write features.tf_record: see its log for the "
      "error")


def test_one_worker_needs_no_barrier():
  for strategy in (tf.distribute.get_strategy(), tf.distribute.MirroredStrategy(["/cpu:0"])):
    assert strategies.num_workers(strategy) == 1
    assert strategies.barrier(strategy) is False and strategies.barrier(strategy, True) is True
    written = []
    strategies.run_on_chief(strategy, lambda: written.append(1), "x")  # noqa: B023 -- called within this iteration
    assert written == [1]

    def write():
      raise OSError("disk full")
    with pytest.raises(OSError, match="disk full"):
      strategies.run_on_chief(strategy, write, "x")
