"""The tools the docs show (tools/*.py) answer a plain mistake as the binaries do
(albert_tf.core.cli): one line on stderr, `error: ` then the flag or file and the fix, exit
status 2 for a usage error and 1 for a file, no traceback.

Each runs as a user runs it (`python3 tools/<tool>.py ...`), with TensorFlow made unimportable:
every mistake here is found before TensorFlow would load (the data tools never load it), which
also keeps this file fast.
"""

import os
import re

import pytest

from repo_paths import REPO_ROOT
from tool_runs import error_line, run_tool

SAMPLE_CORPUS = os.path.join(REPO_ROOT, "data", "sample", "corpus.txt")
TINY_CONFIG = os.path.join(REPO_ROOT, "tests", "testdata", "original_model", "albert_config.json")
ALLOWLIST = os.path.join(REPO_ROOT, "tests", "testdata", "serving_ops_tf2.12.txt")
SPM_MODEL = os.path.join(REPO_ROOT, "tests", "testdata", "original_pretraining_data",
                         "30k-clean-tiny.model")
MISSING = "/nonexistent/corpus.txt"



@pytest.fixture(name="latin1_corpus")
def fixture_latin1_corpus(tmp_path):
  path = tmp_path / "latin1.txt"
  path.write_bytes("a first line\nun caf\u00e9\n".encode("latin-1"))
  return str(path)


# (tool, flags, exit status, what the line must hold). {out} is a fresh output path.
MISTAKES = [
    # train_sentencepiece
    ("train_sentencepiece.py", [f"--input={MISSING}", "--model_prefix={out}"], 1,
     [f"--input: no such file: {MISSING}"]),
    ("train_sentencepiece.py", [f"--input={MISSING}", "--model_prefix={out}",
                                "--nodo_lower_case"], 1, [f"--input: no such file: {MISSING}"]),
    ("train_sentencepiece.py", [f"--input={SAMPLE_CORPUS}", "--model_prefix={out}"], 2,
     ["--vocab_size=30000", "can fill at most 2749 pieces", "pass --vocab_size=2749 or less"]),
    ("train_sentencepiece.py", [f"--input={SAMPLE_CORPUS}", "--model_prefix={out}",
                                "--vocab_size=20"], 2,
     ["--vocab_size=20", "at least 76 pieces", "pass --vocab_size=76 or more"]),
    ("train_sentencepiece.py", [f"--input={SAMPLE_CORPUS}"], 2, ["--model_prefix"]),
    ("train_sentencepiece.py", [f"--input={SAMPLE_CORPUS}", "--model_prefix={out}",
                                "--vocab=100"], 2, ["'vocab'", "vocab_size"]),
    ("train_sentencepiece.py", [f"--input={SAMPLE_CORPUS}", "--model_prefix={out}",
                                "--vocab_size=many"], 2, ["--vocab_size=many"]),
    ("train_sentencepiece.py", [f"--input={SAMPLE_CORPUS}", "--model_prefix={out}",
                                "--num_threads=0"], 2, ["--num_threads=0"]),
    ("train_sentencepiece.py", [f"--input={REPO_ROOT}/data", "--model_prefix={out}"], 1,
     [f"--input: {REPO_ROOT}/data is a directory"]),
    # make_scale_corpus
    ("make_scale_corpus.py", ["--output={out}"], 2, ["--size_mb"]),
    ("make_scale_corpus.py", ["--size_mb=ten", "--output={out}"], 2, ["--size_mb=ten"]),
    ("make_scale_corpus.py", ["--size_mb=0", "--output={out}"], 2,
     ["--size_mb=0.0: give a size above 0"]),
    ("make_scale_corpus.py", ["--size_mb=1", "--output={out}", f"--seed_corpus={MISSING}"], 1,
     [f"--seed_corpus: no such file: {MISSING}"]),
    ("make_scale_corpus.py", ["--size_mb=1", "--output={out}", "--size=1"], 2, ["'size'"]),
    # param_table
    ("param_table.py", [f"--config={MISSING}"], 1, [f"--config={MISSING}", "not found"]),
    ("param_table.py", ["--embedding_sizes=128,big"], 2,
     ["--embedding_sizes=128,big: give positive integers"]),
    ("param_table.py", ["--embedding_size=128"], 2, ["'embedding_size'"]),
    # check_tokenization (a missing file is a usage error there: exit status 2, its docstring's)
    ("check_tokenization.py", [f"--input_file={MISSING}", f"--spm_model_file={SPM_MODEL}"], 2,
     ["--input_file", MISSING]),
    ("check_tokenization.py", [f"--input_file={SAMPLE_CORPUS}"], 2,
     ["--spm_model_file is required"]),
    ("check_tokenization.py", [f"--input_file={SAMPLE_CORPUS}", "--spm_model=x"], 2,
     ["'spm_model'"]),
    ("check_tokenization.py", [f"--input_file={SAMPLE_CORPUS}", f"--spm_model_file={SPM_MODEL}",
                               "--max_lines=all"], 2, ["--max_lines=all"]),
    # serving_client
    ("serving_client.py", [], 2, ["give --text", "--input_ids"]),
    ("serving_client.py", ["--protocol=http", "--text=hi"], 2, ["--protocol=http", "grpc|rest"]),
    ("serving_client.py", ["--text=hi", "--port=8500"], 2, ["'port'"]),
    ("serving_client.py", ["--input_ids=[[2, 13"], 2, ["--input_ids is not valid JSON"]),
    # serving_ops
    ("serving_ops.py", [], 2, ["give --saved_model and --allowlist, or --write_allowlist"]),
    ("serving_ops.py", [f"--saved_model={MISSING}", f"--allowlist={ALLOWLIST}"], 2,
     ["--saved_model", "not found"]),
    ("serving_ops.py", ["--saved_modle=x"], 2, ["--saved_modle"]),
    # benchmark_dynamic_length
    ("benchmark_dynamic_length.py", [f"--config={TINY_CONFIG}", "--batch_size=0"], 2,
     ["--batch_size=0"]),
    ("benchmark_dynamic_length.py", [f"--config={TINY_CONFIG}", "--max_seq_length=128"], 2,
     ["--max_seq_length=128", "max_position_embeddings (64)"]),
    ("benchmark_dynamic_length.py", [f"--config={TINY_CONFIG}", "--max_seq_length=64",
                                     "--data_dir=/nonexistent/glue_data"], 1,
     ["--data_dir: no such directory: /nonexistent/glue_data"]),
    ("benchmark_dynamic_length.py", ["--config=albert_tiny"], 2,
     ["--config=albert_tiny", "unknown ALBERT preset"]),
    ("benchmark_dynamic_length.py", ["--batch=8"], 2, ["'batch'"]),
    # device_check (the second half of tools/device_check.sh)
    ("device_check.py", ["--tiny", "--part=mirrored,throughput"], 2,
     ["--part=mirrored,throughput", "mirrored|throughput"]),
    ("device_check.py", ["--tiny", "--output_json=" + SAMPLE_CORPUS + "/check.json"], 1,
     [f"{SAMPLE_CORPUS} is a file, not a directory"]),
    # benchmark
    ("benchmark.py", [f"--config={TINY_CONFIG}", "--mode=forward", "--batch_size=0"], 2,
     ["--batch_size=0: must be at least 1"]),
    ("benchmark.py", [f"--config={TINY_CONFIG}", "--mode=forward", "--seq_length=128"], 2,
     ["--seq_length=128", "max_position_embeddings (64)"]),
]


@pytest.mark.parametrize("tool,flags,exit_status,expected", MISTAKES,
                         ids=[f"{m[0]}:" + " ".join(re.sub(r"=.*/", "=", f) for f in m[1])
                              for m in MISTAKES])
def test_a_mistake_is_one_error_line(tool, flags, exit_status, expected, tmp_path):
  out = str(tmp_path / "out")
  line = error_line(run_tool(tool, *[f.replace("{out}", out) for f in flags]), exit_status)
  for text in expected:
    assert text in line, line
  assert os.listdir(tmp_path) == []  # nothing written


def test_serving_client_without_a_server(closed_port):
  line = error_line(run_tool("serving_client.py", "--protocol=rest", "--timeout=20",
                             f"--server=127.0.0.1:{closed_port}", "--text=The cat sat."), 1)
  assert f"no REST server answers at 127.0.0.1:{closed_port}" in line


def test_serving_ops_names_the_version_folder(tmp_path):
  (tmp_path / "albert" / "3").mkdir(parents=True)
  (tmp_path / "albert" / "3" / "saved_model.pb").write_bytes(b"")
  line = error_line(run_tool("serving_ops.py", f"--saved_model={tmp_path / 'albert'}",
                             f"--allowlist={ALLOWLIST}"), 2)
  assert f"e.g. --saved_model={tmp_path / 'albert' / '3'}" in line


def test_sentencepiece_names_the_line_that_is_not_utf8(latin1_corpus, tmp_path):
  line = error_line(run_tool("train_sentencepiece.py", f"--input={latin1_corpus}",
                             f"--model_prefix={tmp_path / 'spm'}"), 1)
  assert f"--input: {latin1_corpus}:2: not valid UTF-8" in line


def test_sentencepiece_vocabulary_bound_is_one_that_trains(tmp_path):
  """The largest vocabulary the error line gives trains a model (without TensorFlow)."""
  corpus = tmp_path / "corpus.txt"
  with open(SAMPLE_CORPUS, encoding="utf-8") as f:
    corpus.write_text("".join(f.readlines()[:40]), encoding="utf-8")
  prefix = str(tmp_path / "spm")
  args = [f"--input={corpus}", f"--model_prefix={prefix}", "--num_threads=1", "--random_seed=1"]
  line = error_line(run_tool("train_sentencepiece.py", *args, "--vocab_size=5000"), 2)
  most = int(re.search(r"pass --vocab_size=(\d+) or less", line).group(1))
  assert 100 < most < 5000, line
  result = run_tool("train_sentencepiece.py", *args, f"--vocab_size={most}")
  assert result.returncode == 0, result.stderr[-3000:]
  assert result.stdout == f"wrote {prefix}.model and {prefix}.vocab\n"
  with open(prefix + ".vocab", encoding="utf-8") as f:
    assert len(f.read().splitlines()) == most
