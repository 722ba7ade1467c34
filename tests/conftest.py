"""Fixtures shared by several test files: the installed wheel, and the binary runs that more than
one test checks. A binary's start-up and training are most of the suite's time, so each of these
runs once per session (the first test asking for it pays) and every test reads its outputs and
its stderr instead of running the binary again."""

import collections
import os
import random
import subprocess

import pytest

import installed_package
from helpers import ORIGINAL_MODEL, REPO_ROOT, TESTDATA, run_binary

SPM = os.path.join(TESTDATA, "original_pretraining_data", "30k-clean-tiny.model")
CONFIG = os.path.join(ORIGINAL_MODEL, "albert_config.json")
FINETUNING = os.path.join(TESTDATA, "original_finetuning")
SQUAD = os.path.join(FINETUNING, "squad")

# A finished binary run: `result` its subprocess.CompletedProcess (stderr: its log), `out` its
# --output_dir, `export` its --export_dir (None where it exports nothing), `data` what the test
# data was made of (None for the bundled fixtures).
Run = collections.namedtuple("Run", "result out export data")


@pytest.fixture(scope="session")
def installed_bin(tmp_path_factory):
  """bin/ of a venv holding this checkout's wheel (tests/installed_package.py), built once."""
  root = tmp_path_factory.mktemp("installed")
  wheel = installed_package.build_wheel(root / "dist")
  return installed_package.install_in_venv(wheel, root / "venv")


@pytest.fixture(scope="session")
def quickstart(installed_bin, tmp_path_factory):
  """tools/quickstart.sh as the README runs it (its default STEPS), once, from the installed
  wheel: Run(result, out=its WORK directory). Its model, spm.model and records are there for any
  test that needs a trained quick start."""
  work = tmp_path_factory.mktemp("quickstart") / "work"
  result = subprocess.run(["bash", os.path.join(REPO_ROOT, "tools", "quickstart.sh")],
                          capture_output=True, text=True, timeout=1800,
                          env=dict(installed_package.env_with(installed_bin), WORK=str(work)))
  return Run(result, work, None, None)


def learnable_task(directory):
  """SST-2 layout under directory: a corpus sentence is positive when it has the word "the".
  Returns {split: [sentence]}."""
  with open(os.path.join(REPO_ROOT, "data", "sample", "corpus.txt"), encoding="utf-8") as f:
    lines = [l.strip() for l in f if l.strip() and len(l.split()) <= 20]
  random.Random(0).shuffle(lines)
  label = lambda line: int("the" in line.lower().split())
  os.makedirs(os.path.join(directory, "SST-2"))
  splits = {"train": lines[:1200], "dev": lines[1200:1400], "test": lines[1400:1440]}
  for split, rows in splits.items():
    with open(os.path.join(directory, "SST-2", f"{split}.tsv"), "w", encoding="utf-8") as f:
      f.write("index\tsentence\n" if split == "test" else "sentence\tlabel\n")
      for i, line in enumerate(rows):
        f.write(f"{i}\t{line}\n" if split == "test" else f"{line}\t{label(line)}\n")
  return splits


@pytest.fixture(scope="session")
def classifier_fine_tuned(tmp_path_factory):
  """run_classifier fine-tuning the fixture model on learnable_task (300 steps, an evaluation
  every 100), predicting and exporting a SavedModel: Run(data={split: sentences})."""
  root = tmp_path_factory.mktemp("classifier")
  splits = learnable_task(str(root / "glue"))
  out, export = root / "out", root / "export"
  result = run_binary("run_classifier", [
      f"--spm_model_file={SPM}", f"--albert_config_file={CONFIG}", "--task_name=SST-2",
      f"--data_dir={root / 'glue'}", f"--output_dir={out}", "--max_seq_length=48", "--do_train",
      "--do_eval", "--do_predict", "--train_batch_size=16", "--eval_batch_size=32",
      "--learning_rate=1e-3", "--train_step=300", "--warmup_step=60",
      "--save_checkpoints_steps=100", "--random_seed=1", "--data_seed=1",
      f"--export_dir={export}", "--threshold_to_export=0.7"])
  return Run(result, out, export, splits)


def _squad_run(version, root):
  out, export = root / "out", root / "export"
  # No --max_seq_length: the default (384) is capped at the fixture model's
  # max_position_embeddings, 64, which is exercised so.
  flags = [f"--spm_model_file={SPM}", f"--albert_config_file={CONFIG}", f"--output_dir={out}",
           f"--train_file={os.path.join(SQUAD, version, 'train.json')}",
           f"--predict_file={os.path.join(SQUAD, version, 'dev.json')}", "--doc_stride=24",
           "--max_query_length=16", "--do_train", "--do_predict", "--train_batch_size=8",
           "--learning_rate=2e-3", "--random_seed=1", "--data_seed=2", f"--export_dir={export}"]
  if version == "v1":
    flags += ["--num_train_epochs=20", "--save_checkpoints_steps=25"]
  else:
    flags += ["--num_train_epochs=2", "--save_checkpoints_steps=4",
              f"--init_checkpoint={os.path.join(ORIGINAL_MODEL, 'model.ckpt-0')}"]
  return Run(run_binary(f"run_squad_{version}", flags, timeout=900), out, export, None)


@pytest.fixture(scope="session")
def squad_trained(tmp_path_factory):
  """version ("v1", "v2") -> Run of run_squad_<version> trained on the fixture, evaluated at
  each checkpoint, predicting and exporting (each version run once, when first asked for)."""
  runs = {}

  def get(version):
    if version not in runs:
      runs[version] = _squad_run(version, tmp_path_factory.mktemp(f"squad_{version}"))
    return runs[version]
  return get


@pytest.fixture(scope="session")
def race_trained(tmp_path_factory):
  """run_race on the fixture: 4 steps from the fixture model with a checkpoint and an evaluation
  every 2, then the test set (--do_predict); its dev features at Run.data (--eval_file)."""
  root = tmp_path_factory.mktemp("race")
  out, dev = root / "out", root / "dev.tf_record"
  # No --max_seq_length: the default (512) is capped at max_position_embeddings, 64.
  result = run_binary("run_race", [
      f"--data_dir={os.path.join(FINETUNING, 'race')}", f"--spm_model_file={SPM}",
      f"--albert_config_file={CONFIG}", f"--output_dir={out}", "--max_qa_length=16",
      "--train_batch_size=4", "--train_step=4", "--warmup_step=1", "--save_checkpoints_steps=2",
      "--learning_rate=1e-3", "--do_predict",
      f"--init_checkpoint={os.path.join(ORIGINAL_MODEL, 'model.ckpt-0')}", f"--eval_file={dev}"])
  return Run(result, out, None, dev)
