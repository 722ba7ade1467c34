"""The public API contract: the surface users build on changes only deliberately, and every
name 0.2.0 documented that moved keeps working for one release, with a DeprecationWarning naming
its new home (albert_tf.core.deprecation; tests/public_api.py says how to update the list)."""

import importlib
import json
import os
import re
import subprocess
import sys
import warnings

import pytest

import public_api
from helpers import REPO_ROOT

from albert_tf.core import deprecation

TESTDATA = os.path.join(REPO_ROOT, "tests", "testdata")
# What each module that 0.2.0 had and this release moved held then (read from 0.2.0's sources).
MOVED_0_2_0 = os.path.join(TESTDATA, "api_0.2.0_moved_modules.json")
# What a module that declares names which left it calls (albert_tf.core.deprecation).
DECLARES_MOVED = ("moved_names(__name__", "deprecation.moved_function(")


def _read(path):
  with open(path, encoding="utf-8") as f:
    return f.read()


def _changes(stored, current, where=""):
  """Readable differences between two surfaces (nested dicts)."""
  lines = []
  for key in sorted(set(stored) | set(current)):
    if key not in current:
      lines.append(f"removed: {where}{key}")
    elif key not in stored:
      lines.append(f"added:   {where}{key}")
    elif isinstance(stored[key], dict) and isinstance(current[key], dict):
      lines += _changes(stored[key], current[key], f"{where}{key}.")
    elif stored[key] != current[key]:
      lines.append(f"changed: {where}{key}: {stored[key]!r} -> {current[key]!r}")
  return lines


def test_the_public_surface_is_the_stored_one():
  stored = json.loads(_read(public_api.STORED))
  changes = _changes(stored, public_api.surface())
  assert not changes, (
      "the public API changed:\n  " + "\n  ".join(changes) + "\nIf that is meant, keep a "
      "deprecated alias for a moved name (albert_tf.core.deprecation), say it in CHANGELOG.md, "
      "and write the list again: python3 tests/public_api.py")


def _documented_modules():
  """The modules docs/api.md renders (`::: name`) and the docs' code blocks import."""
  found = set()
  text = _read(os.path.join(REPO_ROOT, "docs", "api.md"))
  for target in re.findall(r"^::: ([\w.]+)", text, re.M):
    parts = target.split(".")
    for end in range(len(parts), 0, -1):  # the longest prefix that is a module
      try:
        importlib.import_module(".".join(parts[:end]))
      except ImportError:
        continue
      found.add(".".join(parts[:end]))
      break
  pages = [os.path.join(REPO_ROOT, "docs", p) for p in os.listdir(os.path.join(REPO_ROOT, "docs"))
           if p.endswith(".md")] + [os.path.join(REPO_ROOT, "README.md")]
  for page in pages:
    for module, names in re.findall(r"^\s*from (albert_tf[\w.]*) import ([\w, ]+)", _read(page),
                                    re.M):
      for name in names.split(","):
        submodule = f"{module}.{name.strip()}"
        try:
          importlib.import_module(submodule)
          found.add(submodule)
        except ImportError:
          found.add(module)
    found.update(re.findall(r"^\s*import (albert_tf[\w.]*)", _read(page), re.M))
  return found


def test_the_docs_document_only_listed_modules():
  documented = _documented_modules()
  assert "albert_tf.core.settings" in documented  # the reading itself works
  assert documented <= set(public_api.MODULES), sorted(documented - set(public_api.MODULES))


def _moved_module_names():
  return sorted(json.loads(_read(MOVED_0_2_0)).items())


def test_the_moved_modules_are_the_table_s():
  assert {name for name, _ in _moved_module_names()} == set(deprecation.MOVED_MODULES)


@pytest.mark.parametrize("old,names", _moved_module_names(), ids=lambda v: str(v)[:40])
def test_a_moved_module_imports_with_a_warning_and_gives_its_names(old, names):
  sys.modules.pop(old, None)
  with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    module = importlib.import_module(old)
  messages = [str(w.message) for w in caught if w.category is DeprecationWarning]
  homes = deprecation.MOVED_MODULES[old]
  assert any(f"module {old} is deprecated" in m and homes[0] in m for m in messages), messages
  for name in names:
    with warnings.catch_warnings(record=True) as caught:
      warnings.simplefilter("always")
      value = getattr(module, name)
    (warning,) = [w for w in caught if w.category is DeprecationWarning]
    home = re.search(r"use (albert_tf[\w.]*)\." + name + "$", str(warning.message)).group(1)
    assert home in homes
    assert value is getattr(importlib.import_module(home), name)
    assert warning.filename == __file__  # it points at the line that used the old name


def _declaring_moved_names():
  """The modules that declare names which left them, found in the sources: a list kept by hand
  would let a module's moved names go unchecked unless something else imported it."""
  declaring = set()
  for folder, _, files in os.walk(os.path.join(REPO_ROOT, "albert_tf")):
    for name in files:
      path = os.path.join(folder, name)
      if name.endswith(".py") and any(call in _read(path) for call in DECLARES_MOVED):
        module = os.path.relpath(path, REPO_ROOT)[:-3].replace(os.sep, ".")
        declaring.add(module.removesuffix(".__init__"))
  return sorted(declaring - {"albert_tf.core.deprecation"})


def test_the_declaring_modules_are_found():
  assert {"albert_tf.core.config", "albert_tf.models", "albert_tf.layers",
          "albert_tf.checkpoints.ours", "albert_tf.training.pretraining",
          "albert_tf.tasks.classifier.settings"} <= set(_declaring_moved_names())


def _moved_names():
  for module in _declaring_moved_names():
    importlib.import_module(module)
  return sorted(deprecation.MOVED_NAMES.items())


def _resolve(dotted):
  parts = dotted.split(".")
  for end in range(len(parts), 0, -1):
    try:
      value = importlib.import_module(".".join(parts[:end]))
    except ImportError:
      continue
    with warnings.catch_warnings():
      warnings.simplefilter("ignore")
      for part in parts[end:]:
        value = getattr(value, part)
    return value
  raise ImportError(dotted)


def test_the_moved_names_are_those_0_2_0_documented():
  assert {old for old, _ in _moved_names()} == {
      "albert_tf.AlbertConfig.from_hf_config", "albert_tf.AlbertConfig.to_hf_config",
      "albert_tf.models.AlbertClassifier", "albert_tf.models.AlbertMultipleChoice",
      "albert_tf.models.AlbertSpanLabeler", "albert_tf.models.AlbertSquadV2",
      "albert_tf.layers.SpanLogits", "albert_tf.layers.SquadV2Head",
      "albert_tf.checkpoints.ours.load_checkpoint",
      "albert_tf.checkpoints.ours.checkpoint_global_step",
      "albert_tf.tasks.classifier.settings.wanted_splits",
      "albert_tf.training.pretraining.PretrainingJob"}


@pytest.mark.parametrize("old,new", [(o, n) for o, n in _moved_names()
                                     if not o.startswith("albert_tf.AlbertConfig.")])
def test_a_moved_name_gives_its_new_home_s_object_with_a_warning(old, new):
  module, _, name = old.rpartition(".")
  with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    value = getattr(importlib.import_module(module), name)
  (warning,) = [w for w in caught if w.category is DeprecationWarning]
  assert str(warning.message).endswith(f"use {new}")
  assert value is _resolve(new)


def test_the_hf_config_methods_warn_and_answer_as_their_new_home():
  from albert_tf.checkpoints import hf_config
  from albert_tf.core.config import AlbertConfig
  path = os.path.join(TESTDATA, "hf_albert", "classifier", "config.json")
  with pytest.warns(DeprecationWarning, match="use albert_tf.checkpoints.hf_config.from_hf_config"):
    config = AlbertConfig.from_hf_config(path)
  assert config == hf_config.from_hf_config(path)
  assert config.hidden_size == json.loads(_read(path))["hidden_size"]
  with pytest.warns(DeprecationWarning, match="use albert_tf.checkpoints.hf_config.to_hf_config"):
    written = config.to_hf_config("AlbertForSequenceClassification", num_labels=3)
  assert written == hf_config.to_hf_config(config, "AlbertForSequenceClassification", 3)
  assert written["architectures"] == ["AlbertForSequenceClassification"]


# 0.2.0's documented code (docs/python-api.md and docs/huggingface.md then), as a user's script.
_SCRIPT_0_2_0 = """
import albert_tf
from albert_tf import settings
from albert_tf.config import AlbertConfig
from albert_tf.squad import read_squad_examples

config = AlbertConfig.from_json_file("data/configs/tiny_quickstart.json")
job = settings.ClassifierSettings(
    output_dir="out", task_name="mrpc", data_dir="glue", do_train=True,
    model=settings.ModelSettings(albert_config_file="c.json", max_seq_length=128),
    tokenizer=settings.TokenizerSettings(spm_model_file="30k-clean.model"),
    train=settings.TrainSettings(optimizer="adamw", learning_rate=3e-5, train_batch_size=128,
                                 num_train_steps=10000, num_warmup_steps=1000))
print(job.train.learning_rate, job.model.max_seq_length, config.hidden_size)
print(type(albert_tf.errors.UsageError("x")).__module__)
print(AlbertConfig.from_hf_config("tests/testdata/hf_albert/encoder/config.json").hidden_size)
"""


def test_0_2_0_documented_code_runs_and_warns_at_the_user_s_lines(tmp_path):
  script = tmp_path / "old_user.py"
  script.write_text(_SCRIPT_0_2_0)
  env = dict(os.environ, PYTHONWARNINGS="default::DeprecationWarning")
  result = subprocess.run([sys.executable, str(script)], cwd=REPO_ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
  assert result.returncode == 0, result.stderr[-3000:]
  tiny = json.loads(_read(os.path.join(REPO_ROOT, "data", "configs", "tiny_quickstart.json")))
  hidden = json.loads(_read(os.path.join(TESTDATA, "hf_albert", "encoder", "config.json")))
  assert result.stdout.split() == ["3e-05", "128", str(tiny["hidden_size"]),
                                   "albert_tf.core.errors", str(hidden["hidden_size"])]
  warned = re.findall(r"old_user\.py:(\d+): DeprecationWarning: (.*)", result.stderr)
  assert ("3", "module albert_tf.settings is deprecated and will be removed in albert_tf 0.4.0: "
          "use albert_tf.core.settings and albert_tf.tasks.classifier.settings and "
          "albert_tf.tasks.race.settings and albert_tf.tasks.squad.settings") in warned
  lines = {int(line) for line, _ in warned}
  assert {3, 4, 5, 8, 15, 16} <= lines, result.stderr[-3000:]


def test_the_changelog_names_every_move_and_the_version():
  changelog = _read(os.path.join(REPO_ROOT, "CHANGELOG.md"))
  for old in list(deprecation.MOVED_MODULES) + [old for old, _ in _moved_names()]:
    assert f"`{old}`" in changelog, old
  version = re.search(r'^version = "([\d.]+)"', _read(os.path.join(REPO_ROOT, "pyproject.toml")),
                      re.M).group(1)
  assert re.search(r"^## (\S+)", changelog, re.M).group(1) == version
  assert f'version="{version}"' in _read(os.path.join(REPO_ROOT, "beam_worker", "setup.py"))
  assert deprecation.REMOVED_IN > version
