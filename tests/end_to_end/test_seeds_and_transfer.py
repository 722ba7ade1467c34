"""The paper's fine-tuning protocol: several seeds of one recipe summarised (tools/run_seeds.py),
and RTE, MRPC and STS-B fine-tuned from an MNLI run's output_dir (a new head, the encoder kept)."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

import warm_binaries
from helpers import ORIGINAL_MODEL, REPO_ROOT, TESTDATA, run_binary

GLUE = os.path.join(TESTDATA, "original_finetuning", "glue", "glue_data")
SPM = os.path.join(TESTDATA, "original_pretraining_data", "30k-clean-tiny.model")
CONFIG = os.path.join(ORIGINAL_MODEL, "albert_config.json")
TOOL = os.path.join(REPO_ROOT, "tools", "run_seeds.py")
# A few steps of the fixture model on the bundled 12-example GLUE files: each run takes seconds.
TINY = [f"--spm_model_file={SPM}", f"--albert_config_file={CONFIG}", f"--data_dir={GLUE}",
        "--max_seq_length=32", "--train_batch_size=4", "--save_checkpoints_steps=2",
        "--do_train", "--do_eval"]
NEW_HEAD = "starting a new task head"


def _seeds(args, recipe, warm_in=None):
  """The tool's run; with `warm_in` (a directory for its python3 shim) its seeds' runs of
  run_classifier start warm (what is checked is the tool's, and the runs are each its own
  process still)."""
  if warm_in:
    return warm_binaries.run_tool_with_warm_children(
        TOOL, args + ["--"] + recipe, warm_in, [["-m", "albert_tf.run_classifier"]], timeout=600)
  return subprocess.run([sys.executable, TOOL] + args + ["--"] + recipe, cwd=REPO_ROOT,
                        capture_output=True, text=True, timeout=600)


def _evaluations(path):
  """The blocks of an eval_results.txt, parsed here apart from the tool's parser."""
  text = open(path, encoding="utf-8").read()
  blocks = []
  for block in text.split("=" * 50 + "\n")[:-1]:
    pairs = dict(line.split(" = ") for line in block.strip().splitlines())
    blocks.append({k: float(v) for k, v in pairs.items() if k != "checkpoint"})
  return blocks


def _expected(out, seeds):
  """{key: (per-seed values, median)} of the seeds' last evaluations, and of their best."""
  finals, bests = {}, {}
  for seed in seeds:
    blocks = _evaluations(os.path.join(out, f"seed_{seed}", "eval_results.txt"))
    with open(os.path.join(out, f"seed_{seed}", "best_trial.txt")) as f:
      best_step = int(f.read().split(":")[1])
    finals[seed] = blocks[-1]
    bests[seed] = [b for b in blocks if b["global_step"] == best_step][-1]
  return finals, bests


def _check_summary(summary, out, seeds):
  finals, bests = _expected(out, seeds)
  for which, evaluations in (("final", finals), ("best", bests)):
    assert set(summary[which]) == set(evaluations[seeds[0]])
    for key, row in summary[which].items():
      values = [evaluations[s][key] for s in seeds]
      assert row["seeds"] == {str(s): v for s, v in zip(seeds, values)}, (which, key)
      assert row["median"] == pytest.approx(np.median(values), abs=1e-12)
      assert row["mean"] == pytest.approx(np.mean(values), abs=1e-12)
      assert row["std"] == pytest.approx(np.std(values, ddof=1), abs=1e-12)
      assert (row["min"], row["max"]) == (min(values), max(values))


@pytest.mark.slow
def test_seeds_summarise_resume_and_report_a_failure(tmp_path):
  out = tmp_path / "mrpc"
  recipe = TINY + ["--task_name=MRPC", "--train_step=4", "--learning_rate=1e-3"]
  first = _seeds(["--seeds=3", f"--output_dir={out}"], recipe, tmp_path / "bin")
  assert first.returncode == 0, first.stdout + first.stderr[-2000:]
  summary = json.loads((out / "seeds_summary.json").read_text())
  assert summary["seeds"] == [1, 2, 3] and summary["failed"] == {}
  _check_summary(summary, str(out), [1, 2, 3])
  assert "eval_accuracy" in summary["final"] and "eval_loss" in summary["best"]
  for seed in (1, 2, 3):
    # Each seed is its own run: its seeds given, its evaluation at the last step.
    assert (out / f"seed_{seed}" / "data_seed.txt").read_text().strip() == str(seed)
    assert summary["final"]["global_step"]["seeds"][str(seed)] == 4
  row = next(line for line in first.stdout.splitlines() if line.startswith("final")
             and "eval_accuracy" in line)
  assert f"{summary['final']['eval_accuracy']['median']:.4f}" in row

  # Finished seeds are skipped; a seed whose run fails is reported, the others still run.
  (out / "seed_0").write_text("a file where seed 0's output_dir goes")
  for name in ("seed_3", "seed_3.json"):
    os.rename(out / name, tmp_path / name)
  again = _seeds(["--seeds=4", "--first_seed=0", f"--output_dir={out}"], recipe, tmp_path / "bin")
  assert again.returncode == 1
  for seed in (1, 2):
    assert f"seed {seed}: finished before, skipped" in again.stdout
  assert "seed 3: done" in again.stdout
  assert "seed 0: FAILED (exit status 1): error:" in again.stdout
  assert again.stderr.strip().splitlines()[-1].startswith("error: 1 of 4 seeds failed (0)")
  resumed = json.loads((out / "seeds_summary.json").read_text())
  assert resumed["failed"]["0"]["exit_status"] == 1
  assert resumed["failed"]["0"]["error"].startswith("error: ")
  _check_summary(resumed, str(out), [1, 2, 3])
  for key in ("eval_accuracy", "eval_loss"):
    # The skipped seeds' figures are their first run's.
    for seed in ("1", "2"):
      assert resumed["final"][key]["seeds"][seed] == summary["final"][key]["seeds"][seed]


@pytest.mark.parametrize("args, recipe, said", [
    (["--seeds=0"], ["--task_name=MRPC"], "--seeds=0"),
    (["--seeds=2"], ["--task_name=MRPC", "--random_seed=3"], "--random_seed=3 after `--`"),
    (["--seeds=2"], [], "no flags for run_classifier"),
    (["--seeds=2", "--parallel=0"], ["--task_name=MRPC"], "--parallel=0"),
])
def test_seeds_bad_flags_are_one_line(args, recipe, said, tmp_path):
  result = _seeds(args + [f"--output_dir={tmp_path / 'out'}"], recipe)
  assert result.returncode == 2
  lines = result.stderr.strip().splitlines()
  assert len(lines) == 1 and lines[0].startswith("error: ") and said in lines[0], result.stderr
  assert not (tmp_path / "out").exists()


@pytest.fixture(scope="module")
def mnli(tmp_path_factory):
  """A run_classifier output_dir fine-tuned on MNLI (3 labels) for 2 steps."""
  out = tmp_path_factory.mktemp("mnli") / "out"
  run_binary("run_classifier", TINY + ["--task_name=MNLI", f"--output_dir={out}",
                                       "--train_step=2", "--learning_rate=1e-3",
                                       "--random_seed=1", "--data_seed=1"])
  return out


def _transfer(mnli, task, out, more=()):
  return run_binary("run_classifier", TINY + [
      f"--task_name={task}", f"--output_dir={out}", f"--init_checkpoint={mnli}",
      "--train_step=2", "--random_seed=2", "--data_seed=2"] + list(more))


@pytest.mark.slow
@pytest.mark.parametrize("task, labels, said", [
    ("RTE", 2, "(2 labels)"), ("MRPC", 2, "(2 labels)"),
    ("STS-B", 1, "(1 output: regression)")])
def test_transfer_from_mnli_keeps_the_encoder_and_starts_a_new_head(mnli, task, labels, said,
                                                                     tmp_path):
  # A learning rate of 0: the checkpoint the run saves holds the weights it started from.
  result = _transfer(mnli, task, tmp_path / "out", ["--learning_rate=0"])
  lines = [line for line in result.stderr.splitlines() if NEW_HEAD in line]
  assert len(lines) == 1, result.stderr[-3000:]
  assert (f"--init_checkpoint={mnli} was fine-tuned as AlbertClassifier of task mnli "
          f"(3 labels), this run is AlbertClassifier of task {task.lower()} {said}; the "
          "encoder is kept") in lines[0]
  source = tf.train.load_checkpoint(str(mnli / "model.ckpt-best"))
  ours = tf.train.load_checkpoint(str(tmp_path / "out" / "model.ckpt-best"))
  encoder = [n for n in source.get_variable_to_shape_map() if n.startswith("bert/")]
  assert len(encoder) > 20
  for name in encoder:  # copied, not computed: bit-identical
    np.testing.assert_array_equal(ours.get_tensor(name), source.get_tensor(name), err_msg=name)
  assert source.get_tensor("output_weights").shape == (3, 32)
  assert ours.get_tensor("output_weights").shape == (labels, 32)
  assert ours.get_tensor("output_bias").shape == (labels,)
  [evaluation] = _evaluations(tmp_path / "out" / "eval_results.txt")
  assert ("pearson" if labels == 1 else "eval_accuracy") in evaluation
  task_record = json.loads((tmp_path / "out" / "fine_tuned_task.json").read_text())
  assert task_record == {"model": "AlbertClassifier", "task": task.lower()}


@pytest.mark.slow
def test_transfer_trains_the_new_head_and_same_task_keeps_its_head(mnli, tmp_path):
  trained = _transfer(mnli, "STS-B", tmp_path / "sts", ["--learning_rate=1e-3"])
  assert trained.stderr.count(NEW_HEAD) == 1
  source = tf.train.load_checkpoint(str(mnli / "model.ckpt-best"))
  sts = tf.train.load_checkpoint(str(tmp_path / "sts" / "model.ckpt-best"))
  assert sts.get_tensor("output_weights").shape == (1, 32)
  # Trained from MNLI's encoder: it moved away from it.
  assert not np.array_equal(sts.get_tensor("bert/pooler/dense/kernel"),
                            source.get_tensor("bert/pooler/dense/kernel"))
  assert "pearson" in _evaluations(tmp_path / "sts" / "eval_results.txt")[-1]
  # The same task and label count: the head is MNLI's own, as before.
  same = _transfer(mnli, "MNLI", tmp_path / "mnli2", ["--learning_rate=0"])
  assert NEW_HEAD not in same.stderr
  ours = tf.train.load_checkpoint(str(tmp_path / "mnli2" / "model.ckpt-best"))
  np.testing.assert_array_equal(ours.get_tensor("output_weights"),
                                source.get_tensor("output_weights"))


@pytest.mark.slow
def test_without_do_train_another_head_is_refused(mnli, tmp_path):
  result = run_binary("run_classifier", [
      f"--spm_model_file={SPM}", f"--albert_config_file={CONFIG}", f"--data_dir={GLUE}",
      "--max_seq_length=32", "--task_name=RTE", f"--output_dir={tmp_path / 'out'}", "--do_eval",
      f"--init_checkpoint={mnli}"], check=False)
  assert result.returncode == 1
  last = result.stderr.strip().splitlines()[-1]
  assert last.startswith(f"error: --init_checkpoint={mnli} holds a head of another shape "
                         "(output_weights [3, 32], this run's is [2, 32]")
  assert "without --do_train" in last and NEW_HEAD not in result.stderr


def _own_csv(path, labels):
  words = "good bad fine great poor nice awful okay".split()
  rows = [" ".join(words[(i * 3 + j) % len(words)] for j in range(5)) + ","
          + labels[i % len(labels)] for i in range(12)]
  path.write_text("text,label\n" + "\n".join(rows) + "\n", encoding="utf-8")
  return str(path)


@pytest.mark.slow
def test_own_data_transfer_to_another_label_list(tmp_path):
  # A 3-label own-data model, then a --label_list of 2 other names: a new head to train
  # (refused as "its head cannot take 2" before), still refused without --do_train.
  flags = [f"--spm_model_file={SPM}", f"--albert_config_file={CONFIG}", "--max_seq_length=32",
           "--train_batch_size=4", "--save_checkpoints_steps=2", "--train_step=2",
           "--learning_rate=0", "--do_eval"]
  source = tmp_path / "three"
  run_binary("run_classifier", flags + [
      "--do_train", f"--train_file={_own_csv(tmp_path / 'three.csv', ['a', 'b', 'c'])}",
      f"--dev_file={tmp_path / 'three.csv'}", f"--output_dir={source}"])
  two = _own_csv(tmp_path / "two.csv", ["x", "y"])
  result = run_binary("run_classifier", flags + [
      "--do_train", f"--train_file={two}", f"--dev_file={two}", "--label_list=x,y",
      f"--output_dir={tmp_path / 'two'}", f"--init_checkpoint={source}"])
  assert result.stderr.count(NEW_HEAD) == 1 and "(3 labels)" in result.stderr
  ours = tf.train.load_checkpoint(str(tmp_path / "two" / "model.ckpt-best"))
  assert ours.get_tensor("output_weights").shape == (2, 32)
  refused = run_binary("run_classifier", flags + [
      f"--dev_file={two}", "--label_list=x,y", f"--output_dir={tmp_path / 'eval'}",
      f"--init_checkpoint={source}"], check=False)
  assert refused.returncode == 1
  assert "--label_list has 2 labels but --init_checkpoint=" in refused.stderr.splitlines()[-1]
