"""The fine-tuning recipes of data/recipes/albert_v2 (the ALBERT paper's Table 14 for the v2
models, as absl flagfiles; docs/reproducing.md): each parses through its binary's own flags
(`--flagfile=`, then cli's bounds), every flag it holds is one of that binary's and lands with
the value its sources give (Table 14 with the README's v2 deltas, and run_glue.sh); every Table
14 task has one; each names its binary and its sources, and names any Table 14 hyperparameter it
could not source instead of leaving it out silently.
"""

import json
import os
import re
import subprocess
import sys

import pytest

from helpers import REPO_ROOT

RECIPES = os.path.join(REPO_ROOT, "data", "recipes", "albert_v2")

# Table 14's tasks (appendix A.4) -> their recipe's file name.
TABLE_14_TASKS = {
    "CoLA": "CoLA", "STS-B": "STS-B", "SST-2": "SST-2", "MNLI": "MNLI", "QNLI": "QNLI",
    "QQP": "QQP", "RTE": "RTE", "MRPC": "MRPC", "WNLI": "WNLI", "SQuAD v1.1": "SQuAD_v1.1",
    "SQuAD v2.0": "SQuAD_v2.0", "RACE": "RACE"}

# The flags that carry Table 14's columns (learning rate, batch, ALBERT dropout, classifier
# dropout, steps, warmup, length) in each binary. The SQuAD binaries count their steps from
# epochs, as the original's; the SQuAD v1.1 head has no dropout.
TABLE_14_FLAGS = {
    "run_classifier": ["learning_rate", "train_batch_size", "albert_dropout",
                       "classifier_dropout", "train_step", "warmup_step", "max_seq_length",
                       "save_checkpoints_steps"],
    "run_race": ["learning_rate", "train_batch_size", "albert_dropout", "dropout_prob",
                 "train_step", "warmup_step", "max_seq_length", "save_checkpoints_steps"],
    "run_squad_v1": ["learning_rate", "train_batch_size", "albert_dropout", "num_train_epochs",
                     "warmup_proportion", "max_seq_length", "save_checkpoints_steps"],
    "run_squad_v2": ["learning_rate", "train_batch_size", "albert_dropout", "dropout_prob",
                     "num_train_epochs", "warmup_proportion", "max_seq_length",
                     "save_checkpoints_steps"],
}

# Table 14 of the paper (appendix A.4), for the v1 models: task -> (learning rate, batch,
# ALBERT DR, classifier DR, training steps, warmup steps, maximum sequence length).
TABLE_14 = {
    "CoLA": (1e-5, 16, 0.0, 0.1, 5336, 320, 512),
    "STS-B": (2e-5, 16, 0.0, 0.1, 3598, 214, 512),
    "SST-2": (1e-5, 32, 0.0, 0.1, 20935, 1256, 512),
    "MNLI": (3e-5, 128, 0.0, 0.1, 10000, 1000, 512),
    "QNLI": (1e-5, 32, 0.0, 0.1, 33112, 1986, 512),
    "QQP": (5e-5, 128, 0.1, 0.1, 14000, 1000, 512),
    "RTE": (3e-5, 32, 0.1, 0.1, 800, 200, 512),
    "MRPC": (2e-5, 32, 0.0, 0.1, 800, 200, 512),
    "WNLI": (2e-5, 16, 0.1, 0.1, 2000, 250, 512),
    "SQuAD_v1.1": (5e-5, 48, 0.0, 0.1, 3649, 365, 384),
    "SQuAD_v2.0": (3e-5, 48, 0.0, 0.1, 8144, 814, 512),
    "RACE": (2e-5, 32, 0.1, 0.1, 12000, 1000, 512),
}
# The README's v2 note: "For v2, we simply adopt the parameters from v1 except for RACE, where
# we use a learning rate of 1e-5 and 0 ALBERT DR".
V2_DELTAS = {"RACE": {"learning_rate": 1e-5, "albert_dropout": 0.0}}

# Where the data, the model and the outputs are: the user's, never a recipe's.
LOCATION_FLAGS = {"data_dir", "output_dir", "init_checkpoint", "albert_config_file",
                  "spm_model_file", "vocab_file", "train_file", "predict_file", "eval_file",
                  "cached_dir", "export_dir", "train_feature_file", "predict_feature_file",
                  "predict_feature_left_file"}

# google-research/albert run_glue.sh (its last commit, "fix an error on the max_seq_length"),
# verbatim: `run_task <task> <warmup_step> <learning_rate> <train_step>
# <save_checkpoints_steps> <train_batch_size>`, each with --max_seq_length=512
# --optimizer=adamw.
RUN_GLUE_SH = """\
run_task SST-2 1256 1e-5 20935 100 32
run_task MNLI 1000 3e-5 10000 100 128
run_task CoLA 320 1e-5 5336 100 16
run_task QNLI 1986 1e-5 33112 200 32
run_task QQP 1000 5e-5 14000 100 128
run_task RTE 200 3e-5 800 100 32
run_task STS-B 214 2e-5 3598 100 16
run_task MRPC 200 2e-5 800 100 32
"""

# The training questions of SQuAD v1.1's and v2.0's train sets, from which the original (and
# run_squad_v1/v2) count their steps: int(questions / batch * epochs).
SQUAD_TRAIN_QUESTIONS = {"SQuAD_v1.1": 87_599, "SQuAD_v2.0": 130_319}

# Each binary's own flags parse each recipe (after importing the binary's module, as `python -m`
# does, without running it); cli.check_flag_values is the bounds check the binary makes next.
# Prints {name: {"values": {flag: value} of the flags given, "error": text}}.
_PARSE = r"""
import json, sys
from importlib import import_module
from absl import flags
from albert_tf.core import cli
import_module("albert_tf." + sys.argv[1])
out = {}
for name, argv in json.loads(sys.argv[2]).items():
  flags.FLAGS.unparse_flags()
  try:
    flags.FLAGS(["recipe"] + argv)
    cli.check_flag_values(flags.FLAGS)
  except flags.Error as e:
    out[name] = {"error": str(e)}
    continue
  out[name] = {"values": {f: flags.FLAGS[f].value for f in list(flags.FLAGS)
                          if flags.FLAGS[f].present and f != "flagfile"}}
print(json.dumps(out))
"""


def _path(name):
  return os.path.join(RECIPES, name + ".flags")


def _read(name):
  with open(_path(name), encoding="utf-8") as f:
    return f.read()


def _comments(text):
  """The comment lines of a flagfile, joined, their `#` and indentation dropped."""
  return " ".join(l.lstrip("#").strip() for l in text.splitlines() if l.startswith("#"))


def _written(text):
  """{flag: value text} of a flagfile's `--flag=value` lines."""
  written = {}
  for line in text.splitlines():
    if line.startswith("--"):
      name, _, value = line[2:].partition("=")
      assert name not in written, f"--{name} is given twice"
      written[name] = value
  return written


def _binary(text):
  match = re.search(r"^# binary: albert_tf\.(\w+)$", text, re.M)
  assert match, "a recipe names its binary: '# binary: albert_tf.<binary>'"
  return match[1]


def _not_sourced(text):
  """The flags a recipe's `# not sourced:` comment names (up to the next sentence)."""
  match = re.search(r"# not sourced: (.*?)\.", text, re.S)
  return set(re.findall(r"--(\w+)", match[1])) if match else set()


def _parse(binary, argvs):
  """{name: parse result} of `argvs` ({name: argv}) through `binary`'s flags."""
  result = subprocess.run([sys.executable, "-c", _PARSE, binary, json.dumps(argvs)],
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
  assert result.returncode == 0, result.stderr[-3000:]
  return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def parsed(tmp_path_factory):
  """{recipe name: its parse through its binary}, plus run_classifier's parse of MRPC.flags
  with later flags and of a flagfile holding an unknown flag (the checks' own references)."""
  by_binary = {}
  for name in TABLE_14_TASKS.values():
    by_binary.setdefault(_binary(_read(name)), {})[name] = ["--flagfile=" + _path(name)]
  by_binary["run_classifier"]["MRPC then overrides"] = [
      "--flagfile=" + _path("MRPC"), "--train_step=4", "--warmup_step=1", "--max_seq_length=128"]
  unknown = tmp_path_factory.mktemp("recipes") / "unknown.flags"
  unknown.write_text(_read("MRPC") + "--no_such_recipe_flag=1\n", encoding="utf-8")
  by_binary["run_classifier"]["unknown flag"] = ["--flagfile=" + str(unknown)]
  results = {}
  for binary, argvs in by_binary.items():
    results.update(_parse(binary, argvs))
  return results


def test_every_table_14_task_has_a_recipe_and_no_other():
  on_disk = sorted(f[:-len(".flags")] for f in os.listdir(RECIPES) if f.endswith(".flags"))
  assert on_disk == sorted(TABLE_14_TASKS.values())


@pytest.mark.parametrize("name", sorted(TABLE_14_TASKS.values()))
def test_recipe_parses_through_its_binary_as_written(name, parsed):
  text = _read(name)
  assert "error" not in parsed[name], parsed[name]
  values = parsed[name]["values"]
  written = _written(text)
  # Every flag written is the binary's (an unknown one is an error above) and is the one given.
  assert set(values) == set(written), (sorted(values), sorted(written))
  for flag, raw in written.items():
    value = values[flag]
    if isinstance(value, str):
      assert str(value) == raw, (flag, value, raw)
    elif isinstance(value, int):
      assert value == int(raw), (flag, value, raw)
    else:
      assert value == float(raw), (flag, value, raw)  # the same decimal text: the same float
  assert not set(written) & LOCATION_FLAGS, "data, model and output paths are the user's"


@pytest.mark.parametrize("name", sorted(TABLE_14_TASKS.values()))
def test_recipe_names_its_sources_and_what_it_could_not_source(name):
  text = _read(name)
  comments = _comments(text)
  assert text.startswith("# "), "the sources come first, as comments"
  assert "Table 14" in comments and "arXiv 1909.11942" in comments
  assert "google-research/albert README.md" in comments and "v2 note" in comments
  assert "ALBERT DR:" in comments and "Classifier DR:" in comments
  binary = _binary(text)
  written = set(_written(text))
  missing = set(TABLE_14_FLAGS[binary]) - written
  assert missing == _not_sourced(text), (
      "a Table 14 flag is either given or named in '# not sourced: --flag, ...'", missing)


def test_glue_recipes_are_run_glue_sh(parsed):
  for line in RUN_GLUE_SH.splitlines():
    _, task, warmup, learning_rate, steps, checkpoints, batch = line.split()
    assert f"`{line}`" in _read(task), f"{task}.flags quotes run_glue.sh's line"
    values = parsed[task]["values"]
    assert values == {
        "task_name": task, "optimizer": "adamw", "learning_rate": float(learning_rate),
        "train_batch_size": int(batch), "albert_dropout": TABLE_14[task][2],
        "classifier_dropout": 0.1, "train_step": int(steps),
        "warmup_step": int(warmup), "max_seq_length": 512,
        "save_checkpoints_steps": int(checkpoints)}, task


def _v2_row(name):
  """{flag: value} of Table 14's row for recipe `name`, the v2 note's deltas applied."""
  learning_rate, batch, albert_dr, classifier_dr, steps, warmup, length = TABLE_14[name]
  row = {"learning_rate": learning_rate, "train_batch_size": batch, "albert_dropout": albert_dr,
         "classifier_dropout": classifier_dr, "train_step": steps, "warmup_step": warmup,
         "max_seq_length": length}
  row.update(V2_DELTAS.get(name, {}))
  return row


@pytest.mark.parametrize("name", sorted(TABLE_14_TASKS.values()))
def test_recipe_is_table_14_with_the_v2_deltas(parsed, name):
  values = dict(parsed[name]["values"])
  row = _v2_row(name)
  if "num_train_epochs" in values:
    # SQuAD: the steps are counted from epochs as the original counts them; Table 14 rounds
    # its warmup (365 for 364.9), the original truncates it.
    steps = int(SQUAD_TRAIN_QUESTIONS[name] / values["train_batch_size"] *
                values["num_train_epochs"])
    values["train_step"] = steps
    values["warmup_step"] = round(steps * values["warmup_proportion"])
  # The classifier dropout's flag is the binary's own; the SQuAD v1.1 head has none (as the
  # original's), whatever Table 14 lists.
  values["classifier_dropout"] = values.get("classifier_dropout", values.get(
      "dropout_prob", row["classifier_dropout"] if name == "SQuAD_v1.1" else None))
  assert {flag: values.get(flag) for flag in row} == row, name


def test_race_recipe_is_the_readme_v2_setting(parsed):
  # The README's v2 note: learning rate 1e-5 and 0 ALBERT DR (the v2 config's) for RACE; the
  # rest as its run_race command, --dropout_prob the original's default.
  assert parsed["RACE"]["values"] == {
      "learning_rate": 1e-5, "train_batch_size": 32, "albert_dropout": 0.0, "dropout_prob": 0.1,
      "train_step": 12000,
      "warmup_step": 1000, "max_seq_length": 512, "max_qa_length": 128,
      "save_checkpoints_steps": 100}
  for name in ("albert_base_v2", "albert_large_v2", "albert_xlarge_v2", "albert_xxlarge_v2"):
    with open(os.path.join(REPO_ROOT, "data", "configs", name + ".json"), encoding="utf-8") as f:
      config = json.load(f)
    assert config["hidden_dropout_prob"] == config["attention_probs_dropout_prob"] == 0, name


@pytest.mark.parametrize("name, learning_rate, epochs, length, steps, warmup", [
    # The README's command (Table 14's steps: int(87,599 / 48 * 2)).
    ("SQuAD_v1.1", 5e-5, 2.0, 384, 3649, 364),
    # Table 14: 3e-5, 8,144 steps, 814 warmup, 512 tokens (not the README's 5e-5, 2 epochs, 384).
    ("SQuAD_v2.0", 3e-5, 3.0, 512, 8144, 814),
])
def test_squad_recipes_train_table_14s_steps(parsed, name, learning_rate, epochs, length, steps,
                                             warmup):
  values = parsed[name]["values"]
  assert (values["learning_rate"], values["train_batch_size"], values["num_train_epochs"],
          values["warmup_proportion"], values["max_seq_length"]) == (
              learning_rate, 48, epochs, 0.1, length)
  # The original's (and run_squad_v1/v2's) count: int(questions / batch * epochs), then
  # int(steps * warmup_proportion).
  counted = int(SQUAD_TRAIN_QUESTIONS[name] / values["train_batch_size"] *
                values["num_train_epochs"])
  assert (counted, int(counted * values["warmup_proportion"])) == (steps, warmup)
  assert "Classifier DR" in _read(name)


def test_later_flags_override_the_recipe(parsed):
  values = parsed["MRPC then overrides"]["values"]
  assert (values["train_step"], values["warmup_step"], values["max_seq_length"]) == (4, 1, 128)
  assert (values["learning_rate"], values["train_batch_size"]) == (2e-5, 32)


def test_an_unknown_flag_in_a_recipe_is_refused(parsed):
  assert "no_such_recipe_flag" in parsed["unknown flag"]["error"]
