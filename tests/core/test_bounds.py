"""One table of bounds (albert_tf.core.bounds) for the binaries' flags and the typed settings: a
job made from settings alone refuses what its binary refuses; counts stop where the loops' int32
would wrap; seeds are numpy's; a sequence holds [CLS], a piece and [SEP]. A write refused by a
full disk, a quota or a read-only file system, and a file given as a directory, end as one line
naming the path."""

import dataclasses
import errno
import os
import subprocess
import sys

import pytest
from absl import flags

from albert_tf.core import cli, errors, io, settings
from albert_tf.tasks.classifier.settings import ClassifierSettings, OwnDataSettings
from albert_tf.tasks.ner.settings import NerSettings
from albert_tf.tasks.race.settings import RaceSettings
from albert_tf.tasks.squad.settings import SquadSettings
from helpers import ORIGINAL_MODEL, REPO_ROOT, TESTDATA, run_binary

INT32_MAX, SEED_MAX = 2**31 - 1, 2**32 - 1
INT32_RULE = f"must be at most {INT32_MAX} (2**31 - 1: the loops count in 32-bit integers)"
MODEL = settings.ModelSettings()


def _usage_error(make):
  with pytest.raises(errors.UsageError) as raised:
    make()
  assert cli.exit_code(raised.value) == errors.USAGE_EXIT_CODE
  return cli.message(raised.value)


# ---- one table ---------------------------------------------------------------------------------
def test_cli_and_the_settings_read_one_table_that_loads_no_tensorflow():
  from albert_tf.core import bounds
  assert cli.FLAG_BOUNDS is bounds.FLAG_BOUNDS
  code = ("import sys\n"
          "import albert_tf.core.bounds, albert_tf.core.settings\n"
          "print('tensorflow' in sys.modules)\n")
  result = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True,
                          text=True, timeout=120, check=True)
  assert result.stdout.split() == ["False"]


# ---- the settings, without flags ---------------------------------------------------------------
@pytest.mark.parametrize("make, expected", [
    (lambda: settings.TrainSettings(learning_rate=float("nan")),
     "learning_rate=nan: must be at least 0.0"),
    (lambda: settings.TrainSettings(train_batch_size=0), "train_batch_size=0: must be at least 1"),
    (lambda: settings.TrainSettings(num_train_steps=-5), "num_train_steps=-5: must be at least 0"),
    (lambda: settings.TrainSettings(iterations_per_loop=INT32_MAX + 1),
     f"iterations_per_loop={INT32_MAX + 1}: {INT32_RULE}"),
    (lambda: dataclasses.replace(settings.TrainSettings(), save_checkpoints_steps=0),
     "save_checkpoints_steps=0: must be at least 1"),
    (lambda: settings.RunSettings(random_seed=-1),
     f"random_seed=-1: must be between 0 and {SEED_MAX}"),
    (lambda: settings.RunSettings(data_seed=SEED_MAX + 1),
     f"data_seed={SEED_MAX + 1}: must be between 0 and {SEED_MAX}"),
    (lambda: settings.ModelSettings(max_seq_length=2),
     "max_seq_length=2: must be at least 3 ([CLS], a piece and [SEP])"),
    (lambda: settings.PretrainingSettings(output_dir="o", input_file="i", model=MODEL,
                                          max_eval_steps=3_000_000_000),
     f"max_eval_steps=3000000000: {INT32_RULE}"),
    (lambda: settings.PretrainingSettings(output_dir="o", input_file="i", model=MODEL,
                                          train=settings.TrainSettings(num_train_steps=0)),
     "num_train_steps=0 with do_train: give at least 1 training step"),
    (lambda: ClassifierSettings(output_dir="o", model=MODEL, task_name="mrpc", data_dir="d",
                                eval_batch_size=0), "eval_batch_size=0: must be at least 1"),
    (lambda: ClassifierSettings(output_dir="o", model=MODEL, task_name="mrpc", data_dir="d",
                                do_train=True, train=settings.TrainSettings(num_train_steps=0)),
     "num_train_steps=0 with do_train"),
    # It adds rules of its own (check()): the bounds are checked all the same.
    (lambda: OwnDataSettings(output_dir="o", model=MODEL, test_file="t.csv", do_predict=True,
                             predict_batch_size=0), "predict_batch_size=0: must be at least 1"),
    (lambda: OwnDataSettings(output_dir="o", model=MODEL, test_file="t.csv", do_predict=True,
                             classifier_dropout=1.0),
     "classifier_dropout=1.0: must be between 0.0 and 0.999"),
    (lambda: SquadSettings(output_dir="o", model=MODEL, n_best_size=0),
     "n_best_size=0: must be at least 1"),
    (lambda: SquadSettings(output_dir="o", model=MODEL, warmup_proportion=1.5),
     "warmup_proportion=1.5: must be between 0.0 and 1.0"),
    (lambda: NerSettings(output_dir="o", model=MODEL, data_dir="d", doc_stride=0),
     "doc_stride=0: must be at least 1"),
    (lambda: RaceSettings(output_dir="o", model=MODEL, data_dir="d", dropout_prob=float("nan")),
     "dropout_prob=nan: must be between 0.0 and 0.999"),
    (lambda: RaceSettings(output_dir="o", model=MODEL, data_dir="d", max_qa_length=INT32_MAX + 1),
     f"max_qa_length={INT32_MAX + 1}: {INT32_RULE}"),
])
def test_settings_out_of_bounds_are_refused_without_flags(make, expected):
  assert _usage_error(make).startswith(expected)


def test_settings_at_their_bounds_and_as_the_jobs_make_them_pass():
  train = settings.TrainSettings(learning_rate=0.0, num_train_steps=1, num_warmup_steps=0,
                                 train_batch_size=INT32_MAX, keep_checkpoint_max=0,
                                 iterations_per_loop=INT32_MAX)
  # A model built for prediction only (SQuAD's without --do_train) has 0 steps.
  assert dataclasses.replace(train, num_train_steps=0).num_train_steps == 0
  settings.RunSettings(random_seed=0, data_seed=SEED_MAX, cpu_devices=0)
  settings.RunSettings(random_seed=None, data_seed=None)
  assert settings.ModelSettings(max_seq_length=3).max_seq_length == 3
  no_steps = settings.TrainSettings(num_train_steps=0)
  settings.PretrainingSettings(output_dir="o", input_file="i", model=MODEL, do_train=False,
                               do_eval=True, train=no_steps, masked_lm_budget=1.0,
                               sentence_order_loss_weight=0.0)
  # SQuAD counts its steps from the data and num_train_epochs, not train.num_train_steps.
  SquadSettings(output_dir="o", model=MODEL, do_train=True, train=no_steps, v2=True)
  ClassifierSettings(output_dir="o", model=MODEL, task_name="mrpc", data_dir="d",
                     classifier_dropout=0.0)
  OwnDataSettings(output_dir="o", model=MODEL, train_file="t.csv", do_train=True, train=train)
  NerSettings(output_dir="o", model=MODEL, data_dir="d", doc_stride=1)
  RaceSettings(output_dir="o", model=MODEL, data_dir="d", max_qa_length=1)


def test_from_values_checks_what_it_builds():
  class Values:  # any object with the flags' names as attributes
    train_batch_size, learning_rate, random_seed = 8, 1e-3, 7
  train = settings.from_values(settings.TrainSettings, Values)
  assert (train.train_batch_size, train.learning_rate) == (8, 1e-3)
  Values.random_seed = -1
  message = _usage_error(lambda: settings.from_values(settings.RunSettings, Values))
  assert message.startswith("random_seed=-1: must be between 0")


# ---- the flags -------------------------------------------------------------------------------
def _flag_values(argv, **defined):
  values = flags.FlagValues()
  for name, default in defined.items():
    define = flags.DEFINE_float if isinstance(default, float) else flags.DEFINE_integer
    define(name, default, "", flag_values=values)
  values(["binary"] + argv)
  return values


@pytest.mark.parametrize("argv, expected", [
    (["--max_eval_steps=3000000000"], f"--max_eval_steps=3000000000: {INT32_RULE}"),
    ([f"--iterations_per_loop={INT32_MAX + 1}"], f"--iterations_per_loop={INT32_MAX + 1}: "),
    ([f"--save_checkpoints_steps={2**40}"], f"--save_checkpoints_steps={2**40}: {INT32_RULE}"),
    ([f"--train_batch_size={INT32_MAX + 1}"], f"--train_batch_size={INT32_MAX + 1}: "),
    ([f"--num_train_steps={INT32_MAX + 1}"], f"--num_train_steps={INT32_MAX + 1}: "),
    (["--random_seed=-1"], f"--random_seed=-1: must be between 0 and {SEED_MAX} (2**32 - 1"),
    ([f"--random_seed={SEED_MAX + 1}"], f"--random_seed={SEED_MAX + 1}: must be between 0"),
    (["--data_seed=-1"], f"--data_seed=-1: must be between 0 and {SEED_MAX}"),
    (["--max_seq_length=1"], "--max_seq_length=1: must be at least 3 ([CLS], a piece and [SEP])"),
    (["--max_seq_length=2"], "--max_seq_length=2: must be at least 3"),
    (["--train_batch_size=0"], "--train_batch_size=0: must be at least 1"),
])
def test_flag_values_past_what_the_code_holds_are_refused(argv, expected):
  values = _flag_values(argv, max_eval_steps=100, iterations_per_loop=1000,
                        save_checkpoints_steps=1000, train_batch_size=32, num_train_steps=10,
                        random_seed=None, data_seed=None, max_seq_length=128)
  with pytest.raises(flags.IllegalFlagValueError) as raised:
    cli.check_flag_values(values)
  assert str(raised.value).startswith(expected), str(raised.value)
  assert cli.exit_code(raised.value) == errors.USAGE_EXIT_CODE


def test_flag_values_at_the_limits_pass():
  cli.check_flag_values(_flag_values(
      [f"--max_eval_steps={INT32_MAX}", f"--iterations_per_loop={INT32_MAX}",
       f"--random_seed={SEED_MAX}", "--data_seed=0", "--max_seq_length=3"],
      max_eval_steps=100, iterations_per_loop=1000, random_seed=None, data_seed=None,
      max_seq_length=128))


def test_every_count_is_held_to_int32():
  from albert_tf.core import bounds
  counts = [name for name, bound in bounds.FLAG_BOUNDS.items()
            if isinstance(bound.low, int) and name not in ("random_seed", "data_seed", "version")]
  assert {"max_eval_steps", "iterations_per_loop", "save_checkpoints_steps", "train_batch_size",
          "num_train_steps", "train_step", "max_seq_length"} <= set(counts)
  for name in counts:
    assert bounds.violation(name, INT32_MAX) is None, name
    assert bounds.violation(name, INT32_MAX + 1).startswith(f"must be at most {INT32_MAX}"), name


def test_a_task_registers_its_own_bounds_and_a_clash_is_refused():
  from albert_tf.core import bounds
  from albert_tf.tasks.race import settings as race_settings
  assert "max_qa_length" not in bounds.FLAG_BOUNDS  # the task's, not every binary's
  bounds.register(race_settings.FLAG_BOUNDS)  # as run_race's define_flags (again: no clash)
  assert bounds.flag_bounds()["max_qa_length"] == race_settings.FLAG_BOUNDS["max_qa_length"]
  values = _flag_values(["--max_qa_length=0"], max_qa_length=128)
  with pytest.raises(flags.IllegalFlagValueError, match=r"^--max_qa_length=0: must be at least 1$"):
    cli.check_flag_values(values)
  with pytest.raises(ValueError, match="--max_qa_length is bound already"):
    bounds.register({"max_qa_length": bounds.count(2)})
  with pytest.raises(ValueError, match="--train_batch_size is bound already"):
    bounds.register({"train_batch_size": bounds.Bound(0)})


# ---- writes the file system refuses ------------------------------------------------------------
@pytest.mark.parametrize("error, expected", [
    (OSError(errno.ENOSPC, "No space left on device", "out/model.ckpt-1.index"),
     "cannot write out/model.ckpt-1.index: No space left on device: free space on that disk, or "
     "give a path on another one"),
    (OSError(errno.EROFS, "Read-only file system", "/mnt/ro/out"),
     "cannot write /mnt/ro/out: Read-only file system: give a path on a file system this "
     "machine can write"),
    (OSError(errno.EDQUOT, "Disk quota exceeded", "out/train.tf_record"),
     "cannot write out/train.tf_record: Disk quota exceeded: free space within this user's disk "
     "quota"),
])
def test_a_refused_write_is_one_line_naming_the_path_and_the_fix(error, expected):
  assert cli.exit_code(error) == errors.FAILED_RUN_EXIT_CODE
  assert cli.message(error).startswith(expected), cli.message(error)


def test_a_refused_write_without_a_path_names_the_outputs(monkeypatch):
  # A file object's write() raises without the path.
  error = OSError(errno.ENOSPC, "No space left on device")
  values = flags.FlagValues()
  flags.DEFINE_string("output_dir", None, "", flag_values=values)
  values(["binary", "--output_dir=runs/mrpc"])
  monkeypatch.setattr(flags, "FLAGS", values)
  assert cli.exit_code(error) == errors.FAILED_RUN_EXIT_CODE
  assert cli.message(error) == ("cannot write the outputs (--output_dir=runs/mrpc): No space "
                                "left on device: free space on that disk, or give a path on "
                                "another one")
  monkeypatch.setattr(flags, "FLAGS", flags.FlagValues())  # not parsed: no flag to name
  assert cli.message(error).startswith("cannot write an output: No space left on device")


def test_a_checkpoint_save_on_a_full_disk_is_one_line():
  tf = pytest.importorskip("tensorflow")
  path = "out/model.ckpt-1_temp/part-00000-of-00001.data-00000-of-00001.tempstate1"
  error = tf.errors.ResourceExhaustedError(
      None, None, f"{{{{function_node __wrapped__SaveV2}}}} {path}; No space left on device "
      "[Op:SaveV2]")
  assert cli.exit_code(error) == errors.FAILED_RUN_EXIT_CODE
  assert cli.message(error).startswith(f"cannot write {path}: No space left on device: free")


def test_other_os_errors_keep_their_traceback():
  assert cli.exit_code(OSError(errno.EIO, "Input/output error")) is None


# ---- a file given as a directory ---------------------------------------------------------------
def test_makedirs_on_a_file_says_it_is_a_file_and_keeps_it(tmp_path):
  data = tmp_path / "train.csv"
  data.write_text("text,label\nhello,1\n")
  with pytest.raises(OSError) as raised:  # an OSError, as before
    io.makedirs(str(data))
  assert cli.exit_code(raised.value) == errors.FAILED_RUN_EXIT_CODE
  assert cli.message(raised.value) == (
      f"{data} is a file, not a directory: give the path of a directory (a new one, or one to "
      "write into)")
  assert data.read_text() == "text,label\nhello,1\n"
  io.makedirs(str(tmp_path / "new" / "out"))
  io.makedirs(str(tmp_path / "new" / "out"))  # there already: nothing to do
  assert (tmp_path / "new" / "out").is_dir()


# ---- end to end --------------------------------------------------------------------------------
_CLASSIFIER = [f"--train_file={os.path.join(TESTDATA, 'own_data', 'reviews.csv')}",
               "--text_column=sentence", "--do_train", "--train_step=1",
               f"--albert_config_file={os.path.join(ORIGINAL_MODEL, 'albert_config.json')}",
               "--spm_model_file=" + os.path.join(TESTDATA, "original_pretraining_data",
                                                  "30k-clean-tiny.model")]


def _error_line(result, code):
  assert result.returncode == code, result.stderr[-3000:]
  lines = [line for line in result.stderr.splitlines() if line.startswith("error:")]
  assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr[-3000:]
  return lines[0]


@pytest.mark.slow
def test_run_classifier_refuses_a_negative_seed_as_a_flag_error(tmp_path):
  result = run_binary("run_classifier", _CLASSIFIER + [f"--output_dir={tmp_path / 'out'}",
                                                       "--random_seed=-1"], check=False)
  line = _error_line(result, errors.USAGE_EXIT_CODE)
  assert line == (f"error: --random_seed=-1: must be between 0 and {SEED_MAX} (2**32 - 1: "
                  "numpy's seeds are 32-bit)")
  assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_run_classifier_refuses_a_data_file_as_output_dir(tmp_path):
  data = tmp_path / "reviews.csv"
  data.write_text("sentence,label\nhello,code\n")
  result = run_binary("run_classifier", _CLASSIFIER + [f"--output_dir={data}"], check=False)
  line = _error_line(result, errors.FAILED_RUN_EXIT_CODE)
  assert line == (f"error: {data} is a file, not a directory: give the path of a directory (a "
                  "new one, or one to write into)")
  assert data.read_text() == "sentence,label\nhello,code\n"
