"""Every command block of the README runs, in order, as a user runs it after the set-up: in a
directory laid out as a fresh clone (links to this checkout's files), with the package installed
(this checkout's wheel: tests/installed_package.py), on the bundled data.

Each block is listed in BLOCKS by its first command line: either run, with substitutions that only
shrink sizes or point at the bundled data, or skipped with the reason. A block that BLOCKS does
not know fails the test: a new README command is either run here or listed as skipped.
"""

import os
import re
import subprocess
import textwrap

import pytest

from helpers import REPO_ROOT
from installed_package import env_with

README = os.path.join(REPO_ROOT, "README.md")

# Outputs a README command writes in the clone: not linked into the test's clone.
_NOT_LINKED = {".git", "work", "export", "serving", "out", "model", "runs", "build", "dist",
               "__pycache__", ".pytest_cache", "spm.model", "spm.vocab", "spm.input.txt"}

_CORPUS = "data/sample/corpus.txt"
_TINY = "data/configs/tiny_quickstart.json"


def run(*substitutions):
  """A block to run, after replacing each (old, new) text in it (each must occur)."""
  return ("run", substitutions)


def skip(reason):
  return ("skip", reason)


# First command line of the block (its start) -> what the test does with it. In README order:
# later blocks use what earlier ones wrote (the quick start's model, spm.model, out/).
BLOCKS = {
    "python3 -m pip install -r requirements.txt -e . && bash tools/quickstart.sh": run(
        # Installed already (the wheel); a few steps (STEPS) are enough for the later blocks.
        ("python3 -m pip install -r requirements.txt -e . && ", "")),
    "python3 -m pip install -r requirements.txt -e . && python3 -m pytest -q":
        skip("the test suite itself (.ci/run runs it)"),
    "python3 tools/train_sentencepiece.py --input=corpus.txt": run(
        ("--input=corpus.txt", f"--input={_CORPUS}"), ("--vocab_size=30000", "--vocab_size=2000"),
        ("--input_file='shards/*.txt'", f"--input_file='{_CORPUS}'"),
        ("--num_workers=8", "--num_workers=2"),
        # 128: what run_pretraining takes without --max_seq_length for this config.
        ("--max_seq_length=512", "--max_seq_length=128"), ("--dupe_factor=5", "--dupe_factor=1"),
        ("albert_base_v2.json", "tiny_quickstart.json"),
        ("--train_batch_size=4096", "--train_batch_size=8"),
        ("--num_train_steps=125000", "--num_train_steps=2"),
        ("--num_warmup_steps=3125", "--num_warmup_steps=1"),
        ("--gradient_accumulation_steps=8", "--gradient_accumulation_steps=2")),
    "python3 tools/make_scale_corpus.py --size_mb=40": run(
        ("--size_mb=40", "--size_mb=1"), ("/tmp/corpus_40mb.txt", "corpus_1mb.txt"),
        ("/tmp/out.tfrecord", "scale.tfrecord"), ("--dupe_factor=5", "--dupe_factor=1")),
    "python3 -m albert_tf.create_pretraining_data --input_file='shards/*.txt' --output_file=out/ "
    "\\": run(
        ("--input_file='shards/*.txt'", f"--input_file='{_CORPUS}'"),
        ("--output_file=out/", "--output_file=out_beam/"),
        ("--max_seq_length=512", "--max_seq_length=64"), ("--dupe_factor=5", "--dupe_factor=1")),
    "python3 -m albert_tf.create_pretraining_data --input_file='gs://":
        skip("Dataflow: a GCP project and gs:// buckets"),
    "python3 -m albert_tf.export_checkpoints --albert_config_file=data/configs/tiny_quickstart":
        run(),
    "python3 -m albert_tf.export_tflite --albert_config_file=data/configs/tiny_quickstart.json":
        run(),
    "docker compose -f tools/serving/docker-compose.yml up -d":
        skip("docker and a running TF Serving (tests/test_serving_client.py covers the client)"),
    "python3 -m albert_tf.export_saved_model --albert_config_file=albert_base_zh/":
        skip("the released albert_base_zh download"),
    "python3 -m albert_tf.export_saved_model --init_checkpoint=path/to/hf_albert":
        skip("Hugging Face model downloads and GLUE's MNLI"),
    "python3 -m albert_tf.run_classifier --task_name=MNLI --data_dir=glue_data":
        skip("the albert_base download and GLUE's MNLI (the sample block below runs)"),
    "python3 -m albert_tf.run_classifier --task_name=MRPC": run(),
    "python3 -m albert_tf.run_squad_v2 --train_file=train-v2.0.json":
        skip("the albert_base download, SQuAD 2.0 and RACE (the sample block below runs)"),
    "python3 -m albert_tf.run_squad_v1 --train_file=tests/testdata/": run(),
    "python3 -m albert_tf.run_ner --data_dir=tests/testdata/ner": run(
        ("--train_step=1200", "--train_step=20"), ("--warmup_step=100", "--warmup_step=2"),
        ("--save_checkpoints_steps=600", "--save_checkpoints_steps=10")),
    'MODELS = {"AlbertTokenClassifier"': skip("Python: a task package's declaration"),
    "def main(argv):": skip("Python: a binary's main()"),
    "import albert_tf": skip("Python with the albert_base download and input tensors left to the "
                             "reader (tests/test_keras_native.py runs the same calls)"),
    "from albert_tf import settings": skip("Python writing to gs://bucket"),
    "bert/encoder/transformer/group_0/inner_group_0/attention_1/self/query/kernel":
        skip("checkpoint variable names, not commands"),
    "python3 -m albert_tf.create_pretraining_data --input_file=corpus.txt --output_file=sop": run(
        ("corpus.txt", _CORPUS), ("30k-clean.model", "spm.model"),
        ("--vocab_file=unused", "--vocab_file=unused --dupe_factor=1 --max_seq_length=128"),
        ("albert_config.json", _TINY),
        ("--do_eval", "--do_eval --num_train_steps=2 --train_batch_size=8 --eval_batch_size=8 "
                      "--max_eval_steps=2")),
    "albert_tf/config.py": skip("the layout, not commands"),
}

# The quick start's steps here: the later blocks need its model, not its metrics
# (tests/test_quickstart.py checks those).
_QUICKSTART_STEPS = "4"


def readme_blocks():
  """The README's fenced blocks: [(first command line, text)], dedented."""
  with open(README, encoding="utf-8") as f:
    text = f.read()
  blocks = []
  for match in re.finditer(r"^( *)```\w*\n(.*?)^\1```", text, re.M | re.S):
    body = textwrap.dedent(match.group(2))
    lines = [l.strip() for l in body.splitlines() if l.strip() and not l.lstrip().startswith("#")]
    blocks.append((lines[0] if lines else "", body))
  return blocks


def _entry(first_line):
  keys = [k for k in BLOCKS if first_line.startswith(k)]
  assert keys, (f"README block {first_line!r} is not in tests/test_readme_commands.py's BLOCKS: "
                "add it, run (with substitutions shrinking it) or skipped with the reason")
  return BLOCKS[max(keys, key=len)]


def _substituted(text, substitutions, first_line):
  for old, new in substitutions:
    assert old in text, f"README block {first_line!r} no longer holds {old!r}: update BLOCKS"
    text = text.replace(old, new)
  return text


def _clone(directory):
  """A fresh-clone layout at directory: a link per file and folder of the checkout."""
  os.makedirs(directory)
  for name in os.listdir(REPO_ROOT):
    if name not in _NOT_LINKED and not name.endswith(".egg-info"):
      os.symlink(os.path.join(REPO_ROOT, name), os.path.join(directory, name))


def test_every_block_is_listed():
  for first_line, _ in readme_blocks():
    _entry(first_line)
  firsts = [first for first, _ in readme_blocks()]
  stale = [key for key in BLOCKS if not any(first.startswith(key) for first in firsts)]
  assert not stale, f"BLOCKS entries with no README block (remove them): {stale}"


@pytest.mark.slow
def test_every_listed_block_runs(installed_bin, tmp_path):
  clone = tmp_path / "clone"
  _clone(clone)
  env = dict(env_with(installed_bin), STEPS=_QUICKSTART_STEPS)
  for first_line, body in readme_blocks():
    action, detail = _entry(first_line)
    if action == "skip":
      continue
    script = _substituted(body, detail, first_line)
    result = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=clone, env=env,
                            capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, (first_line, result.stdout[-2000:], result.stderr[-4000:])
    assert "Traceback" not in result.stderr, (first_line, result.stderr[-4000:])
