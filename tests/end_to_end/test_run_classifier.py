"""run_classifier end to end: the original's features, eval metrics at the fixture checkpoint,
fine-tuning a learnable task, prediction files, and the exported SavedModel."""

import json
import os
import re

import numpy as np
import pytest
import tensorflow as tf

from helpers import ORIGINAL_MODEL, TESTDATA, run_binary
from tfrecord_utils import read_examples
import warm_binaries

# Every test runs run_classifier (5 to 20 s each on 2 cores).
pytestmark = pytest.mark.slow

FINETUNING = os.path.join(TESTDATA, "original_finetuning")
GLUE = os.path.join(FINETUNING, "glue")
SPM = os.path.join(TESTDATA, "original_pretraining_data", "30k-clean-tiny.model")
CONFIG = os.path.join(ORIGINAL_MODEL, "albert_config.json")


def _run(flags, check=True):
  return run_binary("run_classifier", [f"--spm_model_file={SPM}",
                                       f"--albert_config_file={CONFIG}"] + flags, check)


def _eval_results(path):
  blocks, current = [], {}
  with open(path) as f:
    for line in f:
      if line.startswith("="):
        blocks.append(current)
        current = {}
      else:
        key, value = line.strip().split(" = ")
        # `checkpoint = <init>`: the evaluation of the starting checkpoint; the rest are numbers.
        current[key] = value if key == "checkpoint" else float(value)
  return blocks


@pytest.mark.parametrize("task", ["mrpc", "sts-b"])
def test_eval_and_predict_at_the_original_checkpoint(task, tmp_path):
  _run([f"--task_name={task}", f"--data_dir={os.path.join(GLUE, 'glue_data')}",
        f"--output_dir={tmp_path}", "--max_seq_length=48", "--do_eval", "--do_predict",
        "--eval_batch_size=5",
        f"--init_checkpoint={os.path.join(FINETUNING, 'classifier', task, 'model.ckpt-0')}"])
  for ours, theirs in ((f"{task}_eval.tf_record", "dev"), ("predict.tf_record", "test")):
    assert read_examples(str(tmp_path / ours)) == read_examples(
        os.path.join(GLUE, "expected", f"{task}_{theirs}.tfrecord")), ours

  ref = np.load(os.path.join(FINETUNING, "classifier", task, "reference.npz"))
  [result] = _eval_results(tmp_path / "eval_results.txt")
  # The fixture checkpoint's own step, labelled as the starting checkpoint.
  assert result["global_step"] == 0 and result["checkpoint"] == "<init>"
  key_metric = "pearson" if task == "sts-b" else "eval_accuracy"
  assert result["best"] == result[key_metric]  # the best so far counts this evaluation
  assert result["eval_loss"] == pytest.approx(ref["per_example_loss"].mean(), abs=1e-5)
  batch_means = [ref["per_example_loss"][i:i + 5].mean() for i in (0, 5, 10)]
  assert result["loss"] == pytest.approx(np.mean(batch_means), abs=1e-5)
  if task == "sts-b":
    expected = np.corrcoef(ref["predictions"], ref["dev_label_ids"])[0, 1]
    # The fixture's scores spread by only ~1e-3, so 1e-6 differences in them move Pearson ~1e-5.
    assert result["pearson"] == pytest.approx(expected, abs=1e-4)
    assert result["MSE"] == pytest.approx(ref["per_example_loss"].mean(), abs=1e-5)
  else:
    expected = (ref["predictions"] == ref["dev_label_ids"]).mean()
    assert result["eval_accuracy"] == pytest.approx(expected, abs=1e-6)
  assert os.path.exists(tmp_path / "model.ckpt-best.index")
  with open(tmp_path / "submit_results.tsv") as f:
    submit = f.read().splitlines()
  with open(tmp_path / "test_results.tsv") as f:
    probabilities = [[float(x) for x in line.split("\t")] for line in f.read().splitlines()]
  assert submit[0] == "index\tprediction" and len(submit) == 13 and len(probabilities) == 12
  if task == "mrpc":
    assert all(abs(sum(p) - 1) < 1e-5 for p in probabilities)
    assert [s.split("\t")[1] for s in submit[1:]] == [str(int(p[1] > p[0])) for p in probabilities]


def _same_tokenization(texts):
  from albert_tf.tokenization import FullTokenizer
  from albert_tf.tokenization.in_graph import InGraphTokenizer
  python, graph = FullTokenizer(spm_model_file=SPM), InGraphTokenizer(SPM)
  packed = graph.pack(tf.constant(texts), max_seq_length=48)["input_ids"].numpy()
  return np.array([python.convert_tokens_to_ids(["[CLS]"] + python.tokenize(t)[:46] + ["[SEP]"])
                   == [i for i in row if i] for t, row in zip(texts, packed)])


SERVE = """
import json, sys
import numpy as np
import tensorflow as tf
import tensorflow_text  # registers the SentencePiece ops
model = tf.saved_model.load(sys.argv[1])
texts = json.load(open(sys.argv[2]))
out = model.signatures["serving_default"](text=tf.constant(texts))
spec = {k: tf.io.FixedLenFeature([48], tf.int64)
        for k in ("input_ids", "input_mask", "segment_ids")}
records = [r.numpy() for r in tf.data.TFRecordDataset(sys.argv[3])]
features = {k: tf.cast(v, tf.int32) for k, v in tf.io.parse_example(records, spec).items()}
by_ids = model.signatures["tokens"](**features)
assert "albert_tf" not in sys.modules
print(json.dumps({"probabilities": out["probabilities"].numpy().tolist(),
                  "label": [x.decode() for x in out["label"].numpy()],
                  "threshold": float(out["threshold"].numpy()),
                  "tokens_probabilities": by_ids["probabilities"].numpy().tolist(),
                  "tokens_label": [x.decode() for x in by_ids["label"].numpy()]}))
"""


def test_fine_tune_predict_export(classifier_fine_tuned, tmp_path):
  # tests/conftest.py: 300 steps on a learnable task, evaluated every 100, predicted, exported.
  run = classifier_fine_tuned
  splits, out, export = run.data, run.out, run.export
  results = _eval_results(out / "eval_results.txt")
  assert [r["global_step"] for r in results] == [100, 200, 300]
  # Each block's best is the best so far, its own evaluation included; none is the start.
  accuracies = [r["eval_accuracy"] for r in results]
  assert [r["best"] for r in results] == [max(accuracies[:i + 1]) for i in range(3)]
  assert not any("checkpoint" in r for r in results)
  best = max(r["eval_accuracy"] for r in results)
  assert best > 0.85  # chance is about 0.5
  best_step = [r["global_step"] for r in results if r["eval_accuracy"] == best][0]
  with open(out / "best_trial.txt") as f:
    assert f.read().split(":")[:2] == ["300", str(int(best_step))]
  reader = tf.train.load_checkpoint(str(out / "model.ckpt-best"))
  assert reader.get_tensor("global_step") == best_step
  assert reader.get_tensor("output_weights").shape == (2, 32)

  with open(out / "test_results.tsv") as f:
    probabilities = np.array([[float(x) for x in line.split("\t")] for line in f])
  with open(out / "submit_results.tsv") as f:
    submit = [line.rstrip("\n").split("\t") for line in f][1:]
  assert [s[0] for s in submit] == [str(i) for i in range(40)]
  truth = [int("the" in line.lower().split()) for line in splits["test"]]
  assert np.mean([int(s[1]) == t for s, t in zip(submit, truth)]) > 0.8

  [version] = os.listdir(export)
  (tmp_path / "texts.json").write_text(json.dumps(splits["test"]))
  served = warm_binaries.run_python(
      ["-c", SERVE, str(export / version), str(tmp_path / "texts.json"),
       str(out / "predict.tf_record")], "bare", cwd=tmp_path, timeout=300,
      env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
  assert served.returncode == 0, served.stderr[-3000:]
  served = json.loads(served.stdout.strip().splitlines()[-1])
  # From the binary's features, the SavedModel gives the binary's predictions.
  np.testing.assert_allclose(served["tokens_probabilities"], probabilities, atol=1e-5)
  assert served["tokens_label"] == [s[1] for s in submit]
  # From raw text it tokenizes in the graph: the same labels, and the same probabilities where
  # tensorflow-text's SentencePiece segments as the Python one does (it differs on a few runs of
  # repeated symbols such as "******"; see albert_tf/tokenization/in_graph.py).
  assert served["label"] == [s[1] for s in submit]
  same = _same_tokenization(splits["test"])
  assert sum(same) >= 36
  np.testing.assert_allclose(np.array(served["probabilities"])[same], probabilities[same],
                             atol=1e-5)
  assert served["threshold"] == pytest.approx(0.7)


def test_bad_input(tmp_path):
  data = f"--data_dir={os.path.join(GLUE, 'glue_data')}"
  r = _run(["--task_name=nope", data, f"--output_dir={tmp_path}", "--do_eval",
            "--max_seq_length=48"], check=False)
  assert r.returncode != 0 and "Task not found: nope" in r.stderr
  r = _run(["--task_name=mrpc", data, f"--output_dir={tmp_path}", "--do_eval",
            "--max_seq_length=65"], check=False)
  assert r.returncode != 0 and "only trained up to sequence length 64" in r.stderr
  r = _run(["--task_name=mrpc", f"--data_dir={tmp_path}", f"--output_dir={tmp_path}",
            "--do_eval", "--max_seq_length=48"], check=False)
  assert r.returncode != 0 and "data file not found" in r.stderr
  r = _run(["--task_name=mrpc", data, f"--output_dir={tmp_path}"], check=False)
  assert r.returncode != 0 and "do_train" in r.stderr
  cached = tmp_path / "cached"
  cached.mkdir()
  original = open(os.path.join(GLUE, "expected", "mrpc_dev.tfrecord"), "rb").read()
  (cached / "mrpc_eval.tf_record").write_bytes(original)
  r = _run(["--task_name=mrpc", data, f"--output_dir={tmp_path}", f"--cached_dir={cached}",
            "--do_eval", "--max_seq_length=32",
            f"--init_checkpoint={os.path.join(FINETUNING, 'classifier', 'mrpc', 'model.ckpt-0')}"],
           check=False)
  # A cache without a stamp (the original's) cannot be checked. In --cached_dir, which runs
  # share, caches are named after their inputs: the original's file is left as it is, with a
  # log line, and the run writes and evaluates its own, of this run's length.
  assert r.returncode == 0, r.stderr
  [keyed] = cached.glob("mrpc_eval." + "[0-9a-f]" * 16 + ".tf_record")
  assert (f"{cached / 'mrpc_eval.tf_record'} is not read: in a directory runs share, a cache is "
          f"named after its inputs (this run's: {keyed}); mrpc_eval.tf_record, under the "
          "original's name, is the original's or an earlier albert_tf's, and may be deleted "
          "with its stamp") in r.stderr
  assert (cached / "mrpc_eval.tf_record").read_bytes() == original
  assert not (cached / "mrpc_eval.tf_record.stamp.json").exists()
  assert re.search(rf"wrote \d+ dev features \(\d+ real\) to {re.escape(str(keyed))}\n",
                   r.stderr)
  stamp = json.load(open(f"{keyed}.stamp.json"))
  assert stamp["max_seq_length"] == 32 and stamp["task"] == "mrpc"
  records = read_examples(keyed)
  assert records and all(len(e["input_ids"]) == 32 for e in records)


def test_resumed_run_evaluates_only_new_checkpoints(tmp_path):
  flags = ["--task_name=mrpc", f"--data_dir={os.path.join(GLUE, 'glue_data')}",
           f"--output_dir={tmp_path}", "--max_seq_length=48", "--do_train", "--do_eval",
           "--train_batch_size=4", "--save_checkpoints_steps=2", "--learning_rate=1e-3",
           "--warmup_step=1", "--data_seed=3",
           f"--init_checkpoint={os.path.join(FINETUNING, 'classifier', 'mrpc', 'model.ckpt-0')}"]
  _run(flags + ["--train_step=4"])
  resumed = _run(flags + ["--train_step=6"])
  assert "resumed from" in resumed.stderr and "at step 4" in resumed.stderr
  steps = [r["global_step"] for r in _eval_results(tmp_path / "eval_results.txt")]
  assert steps == [2, 4, 6]
  with open(tmp_path / "best_trial.txt") as f:
    last, best_step, best = f.read().split(":")
  results = _eval_results(tmp_path / "eval_results.txt")
  assert int(last) == 6 and float(best) == max(r["eval_accuracy"] for r in results)
  reader = tf.train.load_checkpoint(str(tmp_path / "model.ckpt-best"))
  assert reader.get_tensor("global_step") == int(best_step)


def test_eval_results_best_counts_each_evaluation_and_labels_the_start(tmp_path):
  from albert_tf.finetuning.evaluation import BestCheckpointTracker
  tracker, saved = BestCheckpointTracker(str(tmp_path), "eval_accuracy"), []
  # The starting checkpoint (no model.ckpt-<step> in output_dir yet), then this run's own.
  tracker.record(0, {"eval_accuracy": 0.5, "eval_loss": 0.75}, lambda: saved.append(0))
  for step, accuracy in ((10, 0.25), (20, 0.75)):
    (tmp_path / f"model.ckpt-{step}.index").write_bytes(b"")
    tracker.record(step, {"eval_accuracy": accuracy, "eval_loss": 0.5},
                   lambda step=step: saved.append(step))
  assert (tmp_path / "eval_results.txt").read_text() == "\n".join([
      "checkpoint = <init>", "eval_accuracy = 0.5", "eval_loss = 0.75", "global_step = 0",
      "best = 0.5", "=" * 50,
      "eval_accuracy = 0.25", "eval_loss = 0.5", "global_step = 10", "best = 0.5", "=" * 50,
      "eval_accuracy = 0.75", "eval_loss = 0.5", "global_step = 20", "best = 0.75", "=" * 50,
      ""])
  assert saved == [0, 20] and (tmp_path / "best_trial.txt").read_text() == "20:20:0.75"
