"""Fixtures shared by several test files: the installed wheel, and the binary runs that more than
one test checks. A binary's start-up and training are most of the suite's time, so each of these
runs once per session (the first test asking for it pays) and every test reads its outputs and
its stderr instead of running the binary again.

The suite runs on two pytest-xdist workers (.ci/run: `-n 2 --dist loadgroup`). A session fixture
of this file is computed once across the workers (`once_per_session`: a file lock, its result
pickled beside it), and the tests that use one fixture of a test directory's non-function scope
(these, or a test file's module fixtures) are sent to one worker (`xdist_group`, set by
pytest_collection_modifyitems below), so that no worker waits for another's run or repeats it.
The fixtures of CHEAP_TO_WAIT_FOR are the exception: made in seconds, they are not worth a group
(a worker that asks while another makes one waits those seconds), so that the tests needing only
them spread over the workers.
"""

import collections
import fcntl
import hashlib
import inspect
import os
import pickle
import random
import shutil
import socket
import subprocess

import pytest

import installed_package
from helpers import ORIGINAL_MODEL, REPO_ROOT, TESTDATA, run_binary

SPM = os.path.join(TESTDATA, "original_pretraining_data", "30k-clean-tiny.model")
CONFIG = os.path.join(ORIGINAL_MODEL, "albert_config.json")
FINETUNING = os.path.join(TESTDATA, "original_finetuning")
SQUAD = os.path.join(FINETUNING, "squad")
TESTS = os.path.dirname(os.path.abspath(__file__))

# A finished binary run: `result` its subprocess.CompletedProcess (stderr: its log), `out` its
# --output_dir, `export` its --export_dir (None where it exports nothing), `data` what the test
# data was made of (None for the bundled fixtures).
Run = collections.namedtuple("Run", "result out export data")


# Session fixtures of this file made in seconds (a wheel build, a venv over the running
# interpreter's packages): using one puts a test in no xdist_group (see the module docstring).
CHEAP_TO_WAIT_FOR = {"wheel", "installed_bin"}

# Whether this process is a pytest-xdist worker (pytest_configure). Not PYTEST_XDIST_WORKER: a
# test's own pytest subprocess (tools/device_check.sh's) inherits that variable.
_WORKER = {"is": False}


def pytest_configure(config):
  _WORKER["is"] = hasattr(config, "workerinput")


def once_per_session(tmp_path_factory, name, make):
  """make(directory), a new directory, called once per test session; its (picklable) result.

  Under pytest-xdist, once across the workers: the first worker to ask calls it holding a lock
  file in the session's shared temporary directory (the parent of each worker's basetemp) and
  pickles the result there; a worker asking meanwhile waits, then reads it. Without xdist that
  directory is shared by every pytest run of the user, so it is not used.
  """
  if not _WORKER["is"]:
    return make(tmp_path_factory.mktemp(name))
  shared = tmp_path_factory.getbasetemp().parent / "shared"
  shared.mkdir(exist_ok=True)
  done = shared / f"{name}.pickle"
  with open(shared / f"{name}.lock", "w", encoding="utf-8") as lock:
    fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
    if done.exists():
      with open(done, "rb") as f:
        return pickle.load(f)
    directory = shared / name
    shutil.rmtree(directory, ignore_errors=True)  # what a failed try (another worker's) left
    directory.mkdir()
    value = make(directory)
    with open(f"{done}.tmp", "wb") as f:
      pickle.dump(value, f)
    os.replace(f"{done}.tmp", done)
    return value


def _shared_fixtures(item):
  """Names of the non-function-scoped fixtures defined under tests/ that `item` uses, directly or
  through another fixture: its conftest.py ones by name, a test file's by file and name."""
  names = set()
  for name, definitions in item._fixtureinfo.name2fixturedefs.items():
    for definition in definitions:
      if definition.scope == "function":
        continue
      try:
        source = inspect.getsourcefile(definition.func)
      except TypeError:
        continue
      if source == __file__ and name in CHEAP_TO_WAIT_FOR:
        continue
      if source and os.path.abspath(source).startswith(TESTS + os.sep):
        names.add(name if source == __file__ else f"{os.path.basename(source)}::{name}")
  return names


@pytest.hookimpl(tryfirst=True)  # before xdist's hook reads the groups
def pytest_collection_modifyitems(config, items):
  """Puts the tests that share a session or module fixture (connected through any of them) in
  one xdist_group, named after one of those fixtures; the other tests are spread one by one."""
  del config
  parent = {}

  def root(key):
    while parent.setdefault(key, key) != key:
      key = parent[key]
    return key

  uses = [(item, sorted(_shared_fixtures(item))) for item in items]
  for _, names in uses:
    for name in names:
      parent[root(name)] = root(names[0])
  members = collections.defaultdict(list)
  for key in parent:
    members[root(key)].append(key)
  for item, names in uses:
    if names:
      item.add_marker(pytest.mark.xdist_group(min(members[root(names[0])])))


@pytest.fixture(scope="session")
def wheel(tmp_path_factory):
  """This checkout's wheel, built once (pip wheel writes build/ in the checkout: two builds at
  once would collide)."""
  return once_per_session(tmp_path_factory, "wheel", installed_package.build_wheel)


@pytest.fixture(scope="session")
def installed_bin(wheel, tmp_path_factory):
  """bin/ of a venv holding the wheel over the running interpreter's packages (the extras the
  docs' commands need: tests/installed_package.py), made once."""
  return once_per_session(tmp_path_factory, "installed",
                          lambda d: installed_package.install_in_venv(wheel, d / "venv"))


@pytest.fixture(scope="session")
def plain_installed_bin(wheel, tmp_path_factory):
  """bin/ of a plain venv (no system site packages) where pip installed the wheel and the
  dependencies it declares, nothing else: the user's `pip install .`, made once."""
  return once_per_session(tmp_path_factory, "plain_installed",
                          lambda d: installed_package.install_in_venv(wheel, d / "venv",
                                                                      plain=True))


@pytest.fixture(scope="session")
def quickstart(plain_installed_bin, tmp_path_factory):
  """tools/quickstart.sh as the README runs it (its default STEPS), once, from the wheel in a plain
  venv: Run(result, out=its WORK directory). Its model, spm.model and records are there for any test
  that needs a trained quick start (tests/end_to_end/test_readme_commands.py copies them)."""
  def make(directory):
    work = directory / "work"
    result = subprocess.run(["bash", os.path.join(REPO_ROOT, "tools", "quickstart.sh")],
                            capture_output=True, text=True, timeout=1800,
                            env=dict(installed_package.env_with(plain_installed_bin),
                                     WORK=str(work)))
    return Run(result, work, None, None)
  return once_per_session(tmp_path_factory, "quickstart", make)


@pytest.fixture(scope="session")
def own_data_run(quickstart, plain_installed_bin, tmp_path_factory):
  """block -> Run of that bash block (an own-data block of docs/fine-tuning.md) as pasted, each
  block once: in a directory laid out as a clone after the quick start (a link to each of this
  checkout's files and folders but work/, and work/quickstart the `quickstart` fixture's), in the
  plain venv. Run.out is that directory. tests/end_to_end/test_own_data_samples.py checks what the
  blocks learn, tests/end_to_end/test_readme_commands.py that they run."""
  runs = {}

  def make(block, directory):
    for name in os.listdir(REPO_ROOT):
      if name != "work":
        os.symlink(os.path.join(REPO_ROOT, name), directory / name)
    os.makedirs(directory / "work")
    os.symlink(quickstart.out, directory / "work" / "quickstart")
    result = subprocess.run(["bash", "-euo", "pipefail", "-c", block], cwd=directory,
                            env=installed_package.env_with(plain_installed_bin),
                            capture_output=True, text=True, timeout=900)
    return Run(result, directory, None, None)

  def get(block):
    if block not in runs:
      name = "own_data_" + hashlib.sha256(block.encode("utf-8")).hexdigest()[:16]
      runs[block] = once_per_session(tmp_path_factory, name, lambda d: make(block, d))
    return runs[block]
  return get


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
  def make(root):
    splits = learnable_task(str(root / "glue"))
    out, export = root / "out", root / "export"
    result = run_binary("run_classifier", [
        f"--spm_model_file={SPM}", f"--albert_config_file={CONFIG}", "--task_name=SST-2",
        f"--data_dir={root / 'glue'}", f"--output_dir={out}", "--max_seq_length=48",
        "--do_train", "--do_eval", "--do_predict", "--train_batch_size=16",
        "--eval_batch_size=32", "--learning_rate=1e-3", "--train_step=300", "--warmup_step=60",
        "--save_checkpoints_steps=100", "--random_seed=1", "--data_seed=1",
        f"--export_dir={export}", "--threshold_to_export=0.7"],
        cold=True)  # cold: tests/end_to_end/test_quiet_binaries.py reads its start-up
    return Run(result, out, export, splits)
  return once_per_session(tmp_path_factory, "classifier", make)


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
  # cold: tests/end_to_end/test_quiet_binaries.py reads its start-up
  return Run(run_binary(f"run_squad_{version}", flags, timeout=900, cold=True), out, export,
             None)


@pytest.fixture(scope="session")
def squad_trained(tmp_path_factory):
  """version ("v1", "v2") -> Run of run_squad_<version> trained on the fixture, evaluated at
  each checkpoint, predicting and exporting (each version run once, when first asked for)."""
  runs = {}

  def get(version):
    if version not in runs:
      runs[version] = once_per_session(tmp_path_factory, f"squad_{version}",
                                       lambda root: _squad_run(version, root))
    return runs[version]
  return get


@pytest.fixture(scope="session")
def race_trained(tmp_path_factory):
  """run_race on the fixture: 4 steps from the fixture model with a checkpoint and an evaluation
  every 2, then the test set (--do_predict); its dev features at Run.data (--eval_file)."""
  def make(root):
    out, dev = root / "out", root / "dev.tf_record"
    # No --max_seq_length: the default (512) is capped at max_position_embeddings, 64.
    result = run_binary("run_race", [
        f"--data_dir={os.path.join(FINETUNING, 'race')}", f"--spm_model_file={SPM}",
        f"--albert_config_file={CONFIG}", f"--output_dir={out}", "--max_qa_length=16",
        "--train_batch_size=4", "--train_step=4", "--warmup_step=1",
        "--save_checkpoints_steps=2", "--learning_rate=1e-3", "--do_predict",
        f"--init_checkpoint={os.path.join(ORIGINAL_MODEL, 'model.ckpt-0')}",
        f"--eval_file={dev}"],
        cold=True)  # cold: tests/end_to_end/test_quiet_binaries.py reads its start-up
    return Run(result, out, None, dev)
  return once_per_session(tmp_path_factory, "race", make)


@pytest.fixture(name="closed_port")
def fixture_closed_port():
  """A 127.0.0.1 port that refuses connections: bound (so nothing else takes it), not listening."""
  sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
  sock.bind(("127.0.0.1", 0))
  yield sock.getsockname()[1]
  sock.close()
