"""Every command block of the README and of docs/ runs, in order, as a user runs it after the
set-up: in a directory laid out as a fresh clone (links to this checkout's files), with the
package installed (this checkout's wheel: tests/installed_package.py), on the bundled data.

A fenced block names its language: `bash`, `sh` or `console` blocks run in bash, `python` blocks
in the installed package's python3; `text` blocks (layouts, variable names, outputs) are not
commands. A command block is either
- a template: it holds a line `# template: <placeholders> = <what they are>; get it from
  <where>` (the user's own data, a download, a cloud project) and is not run; each placeholder
  named occurs in the block; or
- listed in BLOCKS by its first command line: run, with substitutions that only shrink sizes or
  point at the bundled data; the quick start, checked on the session's run of it (the
  `quickstart` fixture of tests/conftest.py, from the wheel); an own-data sample of the
  fine-tuning page, checked on the session's run of it as pasted (the `own_data_run` fixture,
  whose learning tests/end_to_end/test_own_data_samples.py checks); a Python excerpt of a source
  file, checked to be in that file; or the test suite's own command, checked to be .ci/run's.
A block that is neither fails the test. A block's `python3 -m albert_tf.<binary>` lines (and its
TensorFlow tools') start from the venv's warm start (_blocks_env), the rest as pasted.

The blocks that read what the quick start wrote (work/quickstart), or what another such block
wrote, run in order in one clone after it; each document's other blocks run in order in a clone
of their own, a test per document, which pytest-xdist's workers share out.
"""

import os
import re
import shutil
import subprocess
import textwrap

import pytest

import warm_binaries
from helpers import REPO_ROOT
from installed_package import env_with

# In run order: later blocks use what earlier ones wrote (the quick start's model, spm.model,
# out/, the exports). The README, then docs/ in mkdocs.yml's order.
DOCUMENTS = ["README.md"] + [os.path.join("docs", page + ".md") for page in (
    "index", "pretraining", "data-at-scale", "fine-tuning", "adding-a-task", "exports",
    "portable", "huggingface", "variants", "reproducing", "python-api", "api", "faithfulness",
    "speed", "layout", "chinese")]

COMMAND_LANGUAGES = {"bash", "sh", "console", "python"}
OTHER_LANGUAGES = {"text"}

# `# template: <placeholders> = <what>; get it (or them) from <where>`.
TEMPLATE = re.compile(r"^\s*# template: (?P<names>.+?) = (?P<what>.+?); get (?:it|them) from "
                      r"(?P<where>\S.*)$", re.M)


def _ignored_at_root():
  """The names .gitignore anchors at the repository root (`/name`, `/name/`): what the docs'
  commands (and builds) write there."""
  with open(os.path.join(REPO_ROOT, ".gitignore"), encoding="utf-8") as f:
    lines = [l.strip() for l in f]
  return {l.strip("/") for l in lines
          if l.startswith("/") and "/" not in l.strip("/") and not any(c in l for c in "*?[")}


# Outputs a command writes in the clone: not linked into the test's clone (a link would let the
# command write into the checkout). Every output at the root is in .gitignore
# (test_root_outputs_are_gitignored).
_NOT_LINKED = {".git", "work", "export", "serving", "out", "model", "runs", "build", "dist",
               "site", "__pycache__", ".pytest_cache", ".venv", "spm.model", "spm.vocab",
               "spm.input.txt"} | _ignored_at_root()



def run(*substitutions):
  """A block to run, after replacing each (old, new) text in it (each must occur)."""
  return ("run", substitutions)


def quickstart(command):
  """The quick start's block: after the install, `command`, which the session's `quickstart`
  fixture runs as the README gives it (tests/conftest.py; tests/end_to_end/test_quickstart.py checks
  its metrics). Its exit and stderr are checked here, and its WORK is copied to the block's
  work/quickstart for the later blocks, instead of a second run."""
  return ("quickstart", command)


def own_data():
  """An own-data sample's block of docs/fine-tuning.md: run as pasted (its full training) by the
  session's `own_data_run` fixture (tests/conftest.py), whose run
  tests/end_to_end/test_own_data_samples.py checks for what it learns. Its exit and stderr are
  checked here and its work/ outputs copied to the block's clone, instead of a second run."""
  return ("own_data", None)


def excerpt(path):
  """A Python block quoting path: its lines after the first (`# excerpt of <path>`) are in it."""
  return ("excerpt", path)


def ci():
  """The test suite's command: .ci/run's, character for character."""
  return ("ci", None)


# First command line of the block (its start) -> what the test does with it.
BLOCKS = {
    # README.md
    # The suite's venv stands for .venv; without pip (the wheel is installed already) it takes
    # a moment.
    "python3 -m venv .venv && . .venv/bin/activate": run(
        ("python3 -m venv .venv", "python3 -m venv --without-pip .venv")),
    # Installed already (the wheel).
    "python3 -m pip install -r requirements.txt -e . && bash tools/quickstart.sh": quickstart(
        "bash tools/quickstart.sh"),
    "python3 -m pip install -r requirements.txt -e . && python3 -m pytest": ci(),
    "mkdocs build --strict": run(),
    # docs/pretraining.md (the paper's run is a template; this is its sample-sized run)
    "python3 tools/train_sentencepiece.py --input=data/sample/corpus.txt": run(),
    # (packing: the sample's records reported, then pretrained packed)
    "python3 tools/padding_report.py --input_file='work/pretraining/records/*.tfrecord'": run(),
    "python3 -m albert_tf.run_pretraining --input_file='work/pretraining/records/*.tfrecord'":
        run(),
    "python3 tools/benchmark.py --config=data/configs/tiny_quickstart.json --batch_size=8": run(
        ("--steps=4", "--steps=2")),
    # (whole-word masking on the bundled Chinese sample)
    "python3 -m albert_tf.create_pretraining_data --input_file=tests/testdata/zh/corpus.txt":
        run(),
    # docs/variants.md (Table 5 on held-out documents, at the tool's quick size)
    "python3 tools/sentence_objectives.py --output_dir=work/sentence_objectives": run(
        ("--train_steps=1500", "--quick")),
    # docs/data-at-scale.md
    "python3 tools/make_scale_corpus.py --size_mb=40": run(
        ("--size_mb=40", "--size_mb=1"), ("/tmp/corpus_40mb.txt", "corpus_1mb.txt"),
        ("/tmp/out.tfrecord", "scale.tfrecord"), ("--dupe_factor=5", "--dupe_factor=1")),
    "python3 -m albert_tf.create_pretraining_data --input_file='data/sample/*.txt'": run(
        ("--max_seq_length=128", "--max_seq_length=64"), ("--dupe_factor=5", "--dupe_factor=1")),
    # docs/fine-tuning.md
    "python3 -m albert_tf.run_classifier --task_name=MRPC": run(),
    "python3 -m albert_tf.run_classifier --train_file=data/sample/own_data/topics_train.jsonl":
        own_data(),
    "python3 -m albert_tf.run_classifier --train_file=data/sample/own_data/ratings_train.csv":
        own_data(),
    "python3 -m albert_tf.run_squad_v1 --train_file=tests/testdata/": run(),
    # (the character NER sample)
    "python3 -m albert_tf.run_ner --data_dir=tests/testdata/zh/ner_words": run(
        ("--train_step=30", "--train_step=4"), ("--warmup_step=3", "--warmup_step=1"),
        ("--save_checkpoints_steps=30", "--save_checkpoints_steps=4")),
    # docs/chinese.md
    "python3 -m albert_tf.run_squad_v1 --vocab_file=tests/testdata/cmrc2018": run(),
    "python3 -m albert_tf.run_ner --data_dir=tests/testdata/ner": run(
        ("--train_step=1200", "--train_step=20"), ("--warmup_step=100", "--warmup_step=2"),
        ("--save_checkpoints_steps=600", "--save_checkpoints_steps=10")),
    # docs/adding-a-task.md
    'MODELS = {"AlbertTokenClassifier"': excerpt("albert_tf/tasks/ner/__init__.py"),
    "def main(argv):": excerpt("albert_tf/run_ner.py"),
    # docs/exports.md
    "python3 -m albert_tf.export_checkpoints --albert_config_file=data/configs/tiny_quickstart":
        run(),
    # The quick start's model in token ids only, run by saved_model_cli, then from Python
    # without tensorflow-text.
    "python3 -m albert_tf.export_saved_model --ids_only": run(),
    "import sys": run(),
    # The TF Hub-format exports of the quick start's model, then the tutorial's tf_keras model
    # and the Keras 3 one on them.
    "python3 -m albert_tf.export_tfhub --export_type=model_with_mlm": run(),
    "import tensorflow as tf": run(),
    "import keras": run(),
    # Static int8 from the fine-tuning page's MRPC sample run (work/mrpc).
    "python3 -m albert_tf.export_onnx --init_checkpoint=work/mrpc": run(),
    # docs/portable.md (the runtimes block runs the files the export block wrote)
    "python3 -m albert_tf.export_tflite --albert_config_file=data/configs/tiny_quickstart.json":
        run(),
    "import numpy as np": run(),
    # docs/huggingface.md: the fine-tuning page's MRPC classifier for transformers.
    "python3 -m albert_tf.export_checkpoints --format=hf": run(),
    # (the keras-hub sample: the quick start's model for keras-hub)
    "python3 -m albert_tf.export_checkpoints --format=hf --head=pretraining": run(),
    # docs/variants.md: the runnable ablation (a few steps are enough here).
    "python3 -m albert_tf.create_pretraining_data --input_file=data/sample/corpus.txt": run(
        ("--num_train_steps=100", "--num_train_steps=2")),
    # docs/reproducing.md: the MRPC recipe on the bundled sample, its sizes overridden.
    "python3 -m albert_tf.run_classifier --flagfile=data/recipes/albert_v2/MRPC.flags": run(),
    # docs/python-api.md
    "import albert_tf": run(),
}

def fenced_blocks():
  """Every fenced block of DOCUMENTS: [(document, language, text)], dedented, in run order."""
  blocks = []
  for document in DOCUMENTS:
    with open(os.path.join(REPO_ROOT, document), encoding="utf-8") as f:
      text = f.read()
    for match in re.finditer(r"^( *)```(\w*)\n(.*?)^\1```", text, re.M | re.S):
      blocks.append((document, match.group(2), textwrap.dedent(match.group(3))))
  return blocks


def first_command(body):
  lines = [l.strip() for l in body.splitlines() if l.strip() and not l.lstrip().startswith("#")]
  return lines[0] if lines else ""


def command_blocks():
  """[(document, language, first command line, text)] of the blocks that are not templates."""
  return [(document, language, first_command(body), body)
          for document, language, body in fenced_blocks()
          if language in COMMAND_LANGUAGES and not TEMPLATE.search(body)]


def _entry(document, first_line):
  keys = [k for k in BLOCKS if first_line.startswith(k)]
  assert keys, (f"{document}: block {first_line!r} is not in "
                "tests/end_to_end/test_readme_commands.py's BLOCKS: run it there (with "
                "substitutions shrinking it), or mark it as a template with a '# template: "
                "<placeholders> = ...; get it from ...' line")
  return BLOCKS[max(keys, key=len)]


def _substituted(text, substitutions, first_line):
  for old, new in substitutions:
    assert old in text, f"block {first_line!r} no longer holds {old!r}: update BLOCKS"
    text = text.replace(old, new)
  return text


def _clone(directory):
  """A fresh-clone layout at directory: a link per file and folder of the checkout."""
  os.makedirs(directory)
  for name in os.listdir(REPO_ROOT):
    if name not in _NOT_LINKED and not name.endswith(".egg-info"):
      os.symlink(os.path.join(REPO_ROOT, name), os.path.join(directory, name))


def test_documents_are_the_docs_pages():
  pages = sorted(os.path.join("docs", f) for f in os.listdir(os.path.join(REPO_ROOT, "docs"))
                 if f.endswith(".md"))
  assert pages == sorted(DOCUMENTS[1:]), "list every docs/*.md page in DOCUMENTS, in nav order"


def test_every_block_names_its_language():
  for document, language, body in fenced_blocks():
    assert language in COMMAND_LANGUAGES | OTHER_LANGUAGES, (
        f"{document}: a block without a known language ({language!r}): "
        f"{first_command(body)!r}; use one of {sorted(COMMAND_LANGUAGES | OTHER_LANGUAGES)}")


def test_every_block_is_run_or_a_template():
  firsts = []
  for document, _, first_line, _ in command_blocks():
    _entry(document, first_line)
    firsts.append(first_line)
  stale = [key for key in BLOCKS if not any(first.startswith(key) for first in firsts)]
  assert not stale, f"BLOCKS entries with no block in {DOCUMENTS} (remove them): {stale}"


def test_templates_name_their_placeholders_and_where_to_get_them():
  templates = [(d, body) for d, language, body in fenced_blocks()
               if language in COMMAND_LANGUAGES and TEMPLATE.search(body)]
  assert templates, "no template blocks found: is the marker still '# template: '?"
  for document, body in templates:
    commands = "\n".join(l for l in body.splitlines() if not l.lstrip().startswith("#"))
    for marker in TEMPLATE.finditer(body):
      for name in re.split(r",\s*", marker["names"]):
        assert name and name in commands, (
            f"{document}: template placeholder {name!r} is not in its block's commands")


# Flags that name a file or directory a command writes.
_OUTPUT_FLAG = re.compile(r"--(?:output_file|output_dir|export_path|export_dir|model_prefix|"
                          r"output_json|output)[= ](?P<path>[^\s\\`'\"]+)")


def test_root_outputs_are_gitignored():
  """What a command of the docs (run or template) writes in the repository is under a path
  .gitignore anchors at the root (work/, out/, hub/, albert_int8.onnx, ...), so that running the
  docs from a checkout leaves `git status` clean."""
  ignored = _ignored_at_root()
  missing = set()
  for document, language, body in fenced_blocks():
    if language not in COMMAND_LANGUAGES:
      continue
    for match in _OUTPUT_FLAG.finditer(body):
      path = match["path"]
      if path.startswith(("/", "gs://", "$", "~")) or path in (".", "./"):
        continue
      first = path.split("/")[0]
      names = [first + ".model", first + ".vocab"] if "--model_prefix" in match[0] else [first]
      missing.update(f"{document}: {match[0]} ({name})" for name in names if name not in ignored)
  assert not missing, f"add to .gitignore (anchored, /name): {sorted(missing)}"


def test_excerpts_are_in_their_files():
  for document, _, first_line, body in command_blocks():
    action, path = _entry(document, first_line)
    if action != "excerpt":
      continue
    lines = body.strip("\n").splitlines()
    assert lines[0] == f"# excerpt of {path}", (document, lines[0])
    with open(os.path.join(REPO_ROOT, path), encoding="utf-8") as f:
      source = f.read()
    quoted = "\n".join(lines[1:])
    assert quoted in source, f"{document}: the excerpt of {path} is no longer in it:\n{quoted}"


def test_the_test_command_is_ci_runs():
  with open(os.path.join(REPO_ROOT, ".ci", "run"), encoding="utf-8") as f:
    ci_commands = [l for l in f.read().splitlines() if l.startswith("python3 ")]
  tests = [body.strip() for document, _, first_line, body in command_blocks()
           if _entry(document, first_line)[0] == "ci"]
  assert len(tests) == 1 and tests == ci_commands, (tests, ci_commands)


# What the quick start's block writes, which the blocks after it read.
QUICKSTART_OUTPUT = "work/quickstart"
AFTER_THE_QUICK_START = "after the quick start"


def blocks_to_run():
  """The blocks run (or checked on a session fixture's run), each with its script (after its
  substitutions), cut into chains that share no file: {chain: [(document, language, first line,
  action, script)]}, each chain in run order. AFTER_THE_QUICK_START: the quick start's block and
  every block whose script names QUICKSTART_OUTPUT or a path an earlier block of the chain writes
  (_OUTPUT_FLAG); each document's other blocks: the chain named after the document."""
  chains = {AFTER_THE_QUICK_START: []}
  read_after = [QUICKSTART_OUTPUT]
  for document, language, first_line, body in command_blocks():
    action, detail = _entry(document, first_line)
    if action not in ("run", "quickstart", "own_data"):
      continue
    script = _substituted(body, detail, first_line) if action == "run" else body
    block = (document, language, first_line, action, script)
    if action == "quickstart" or any(path in script for path in read_after):
      chains[AFTER_THE_QUICK_START].append(block)
      read_after += [m["path"].rstrip("/") for m in _OUTPUT_FLAG.finditer(script)]
    else:
      chains.setdefault(document, []).append(block)
  return chains


def _run_blocks(blocks, clone, env, quickstart_run=None, own_data_run=None):
  """Runs each block in order in the clone (bash or python3), or checks the session fixture's
  run of it and copies that run's outputs into the clone for the blocks after it."""
  for document, language, first_line, action, script in blocks:
    if action == "quickstart":
      expected = "python3 -m pip install -r requirements.txt -e . && " + _entry(
          document, first_line)[1]
      assert script.strip() == expected, (
          f"{document}: the quick start's block is no longer {expected!r}: update "
          "BLOCKS (and the quickstart fixture, tests/conftest.py, if its command changed)")
      result = quickstart_run.result
      outputs = {quickstart_run.out: clone / QUICKSTART_OUTPUT}
    elif action == "own_data":
      run = own_data_run(script)
      result = run.result
      outputs = {run.out / "work" / name: clone / "work" / name
                 for name in os.listdir(run.out / "work") if name != "quickstart"}
    else:
      command = ["python3", "-c", script] if language == "python" else [
          "bash", "-euo", "pipefail", "-c", script]
      result = subprocess.run(command, cwd=clone, env=env, capture_output=True, text=True,
                              timeout=900)
      outputs = {}
    assert result.returncode == 0, (document, first_line, result.stdout[-2000:],
                                    result.stderr[-4000:])
    assert "Traceback" not in result.stderr, (document, first_line, result.stderr[-4000:])
    for source, target in outputs.items():
      shutil.copytree(source, target, symlinks=True)


def _blocks_env(installed_bin, directory, blocks):
  """The blocks' environment. The quickstart fixture's venv is plain (the core dependencies
  only); the other blocks use the extras too (mkdocs, the portable runtimes, transformers):
  installed_bin's venv, whose `python3 -m albert_tf.<binary>` commands start from its warm
  start (warm_binaries.python3_shim, first on PATH; tests/end_to_end/test_warm_start.py checks
  that a warm run is the run a fresh interpreter makes)."""
  env = dict(env_with(installed_bin), NO_MKDOCS_2_WARNING="1")
  # The first line of each python3 command is enough to tell which server it needs.
  commands = [line.rstrip("\\").split()[1:] for b in blocks for line in b[-1].splitlines()
              if line.startswith("python3 ")]
  shim = warm_binaries.python3_shim(str(directory), os.path.join(installed_bin, "python3"), env,
                                    commands)
  return dict(env, PATH=shim + os.pathsep + env["PATH"])


@pytest.mark.slow
def test_the_blocks_after_the_quick_start_run(installed_bin, quickstart, own_data_run, tmp_path):
  blocks = blocks_to_run()[AFTER_THE_QUICK_START]
  assert [b for b in blocks if b[3] == "quickstart"], "no quick start block: update BLOCKS"
  _clone(tmp_path / "clone")
  _run_blocks(blocks, tmp_path / "clone", _blocks_env(installed_bin, tmp_path / "bin", blocks),
              quickstart, own_data_run)


@pytest.mark.slow
@pytest.mark.parametrize("document", DOCUMENTS)
def test_each_documents_other_blocks_run(document, installed_bin, tmp_path):
  """The blocks of `document` that need nothing the quick start wrote, in a clone of their own
  (none of them reads what another document's blocks write)."""
  blocks = blocks_to_run().get(document, [])
  _clone(tmp_path / "clone")
  _run_blocks(blocks, tmp_path / "clone", _blocks_env(installed_bin, tmp_path / "bin", blocks))
