"""tools/check_tokenization.py counts the lines whose training ids (FullTokenizer) and served ids
(InGraphTokenizer) differ, on the fixture corpus and model."""

import json
import os
import re
import subprocess
import sys

import pytest

# repo_paths and warm_binaries, not helpers.py: helpers imports TensorFlow, which only the tool's
# processes need (seconds of this test's time).
import warm_binaries
from repo_paths import REPO_ROOT

DATA = os.path.join(REPO_ROOT, "tests", "testdata", "original_pretraining_data")
SPM = os.path.join(DATA, "30k-clean-tiny.model")
CORPUS = os.path.join(DATA, "corpus.txt")
TOOL = os.path.join(REPO_ROOT, "tools", "check_tokenization.py")

# Measured with sentencepiece 0.2.3 and tensorflow-text 2.21.1: the lines of corpus.txt (2119
# non-blank) and of tokenization.jsonl's 406 texts whose ids differ. Every one ends in or holds a
# run of one repeated character ("=====", "*****", "111") that the two SentencePiece versions split
# in another order.
CORPUS_DIFFERING = [16, 24, 34, 169, 241, 284, 522, 787, 829, 835, 853, 884, 937, 942, 993, 1339,
                    1474, 1579, 2126, 2141, 2148]
JSONL_DIFFERING = [15, 23, 33, 159, 231, 271]
RUN = re.compile(r"(\S)\1\1")  # three or more of one character


def run_tool(*flags, warm=False):
  """The tool's run; with warm, from the suite's warm start (tests/warm_binaries.py), for the
  runs that count (TensorFlow's tokenizer loaded); the refusals run fresh, as they come before
  TensorFlow would load."""
  return warm_binaries.run_script(TOOL, flags, cwd=REPO_ROOT, timeout=300, cold=not warm)


def _summary(result):
  assert result.returncode == 0, result.stderr[-3000:]
  return json.loads(result.stdout.splitlines()[-1])


def _reported_lines(stdout):
  """{file: [line numbers]} of the differing lines the tool printed."""
  out = {}
  for path, number in re.findall(r"^(.+):(\d+): ", stdout, re.M):
    out.setdefault(path, []).append(int(number))
  return out


@pytest.fixture(scope="module")
def jsonl_corpus(tmp_path_factory):
  """tokenization.jsonl's 406 texts as a corpus, one a line (none holds a newline)."""
  with open(os.path.join(DATA, "tokenization.jsonl"), encoding="utf-8") as f:
    texts = [json.loads(line)["text"] for line in f]
  assert len(texts) == 406 and not any("\n" in t or not t.strip() for t in texts)
  path = tmp_path_factory.mktemp("check") / "fixture_lines.txt"
  path.write_text("".join(t + "\n" for t in texts), encoding="utf-8")
  return str(path), texts


@pytest.mark.slow  # tokenizes 2,500 lines twice
def test_fixture_corpus_counts_and_examples(jsonl_corpus):
  path, texts = jsonl_corpus
  # Small batches and progress every batch: counts must not depend on where batches end.
  result = run_tool(f"--input_file={CORPUS},{path}", f"--spm_model_file={SPM}", "--examples=50",
                    "--batch_size=300", "--progress_seconds=0", warm=True)
  summary = _summary(result)
  assert summary == {
      "lines": 2119 + 406, "differing": 21 + 6, "repeated_run_ties": 27,
      "files": [{"file": CORPUS, "lines": 2119, "differing": 21},
                {"file": path, "lines": 406, "differing": 6}]}
  assert "lines whose ids differ: 27 of 2525 (1.07%)" in result.stdout
  assert f"{path}: 6 of 406 (1.48%)" in result.stdout
  assert _reported_lines(result.stdout) == {CORPUS: CORPUS_DIFFERING, path: JSONL_DIFFERING}
  with open(CORPUS, encoding="utf-8") as f:
    corpus_lines = f.read().split("\n")
  for number in CORPUS_DIFFERING:
    assert RUN.search(corpus_lines[number - 1]), corpus_lines[number - 1]
  for number in JSONL_DIFFERING:
    assert re.search(r"(=|\*){10,}$", texts[number - 1]), texts[number - 1]
  # Each example shows both piece sequences around the difference; here they spell the same run.
  examples = re.findall(r"training: (.*)\n.*served:   (.*)\n", result.stdout)
  assert len(examples) == 27
  for training, served in examples:
    assert training != served and training.replace(" ", "") == served.replace(" ", "")
  assert "not a repeated-character tie" not in result.stdout
  # Progress after each full batch (batches end with their file).
  assert re.search(r"^\[check_tokenization .*file 1/2 .*: 2100 lines checked, 19 differing",
                   result.stderr, re.M), result.stderr


@pytest.mark.slow  # tokenizes 1,900 lines twice
def test_corpus_without_repeated_runs_agrees(tmp_path):
  with open(CORPUS, encoding="utf-8") as f:
    lines = [l for l in f.read().split("\n") if not RUN.search(l)]
  half = len(lines) // 2
  (tmp_path / "part0.txt").write_text("\n".join(lines[:half]) + "\n", encoding="utf-8")
  (tmp_path / "part1.txt").write_text("\n".join(lines[half:]), encoding="utf-8")
  # Past --max_lines: never read, though it would differ.
  (tmp_path / "part2.txt").write_text("Value comparisons =================\n", encoding="utf-8")
  result = run_tool(f"--input_file={tmp_path}/part*.txt", f"--spm_model_file={SPM}",
                    "--max_lines=1905", warm=True)
  summary = _summary(result)
  assert (summary["lines"], summary["differing"], summary["repeated_run_ties"]) == (1905, 0, 0)
  assert [(f["file"], f["differing"]) for f in summary["files"]] == [
      (str(tmp_path / "part0.txt"), 0), (str(tmp_path / "part1.txt"), 0)]
  assert sum(f["lines"] for f in summary["files"]) == 1905
  assert "lines whose ids differ: 0 of 1905 (0.00%)" in result.stdout
  assert "differing line(s):" not in result.stdout


@pytest.mark.parametrize("flags,message", [
    (["--input_file=missing_corpus.txt", f"--spm_model_file={SPM}"],
     "--input_file: input file not found: missing_corpus.txt"),
    ([f"--input_file={CORPUS}", "--spm_model_file=missing.model"],
     "--spm_model_file=missing.model: file not found: missing.model"),
    ([f"--input_file={CORPUS}", f"--spm_model_file={os.path.join(DATA, '30k-clean-tiny.vocab')}"],
     "--spm_model_file: could not load"),
    ([f"--spm_model_file={SPM}"], "--input_file is required"),
    ([f"--input_file={CORPUS}", f"--spm_model_file={SPM}", "--batch_size=0"],
     "--batch_size=0: must be at least 1"),
])
def test_bad_input_exits_2_naming_the_flag(flags, message):
  result = run_tool(*flags)
  assert result.returncode == 2, (result.returncode, result.stderr[-2000:])
  assert message in result.stderr, result.stderr
  assert result.stdout == ""


def test_invalid_utf8_names_the_line(tmp_path):
  path = tmp_path / "latin1.txt"
  path.write_bytes("fine\ncaf\u00e9\n".encode("latin-1"))
  result = run_tool(f"--input_file={path}", f"--spm_model_file={SPM}")
  assert result.returncode == 2
  assert f"{path}:2: not valid UTF-8" in result.stderr, result.stderr


def test_a_tie_may_span_several_runs_and_other_pieces():
  # A table border ("+----+----+") split at other places within its runs, as the sample corpus's
  # line 1643 is with the quick start's model: a tie, not something to report. In a process of
  # its own: the tool defines absl flags (--input_file) that create_pretraining_data, imported by
  # other tests in this process, defines too.
  cases = [(["▁", "====|", "===", "==|"], ["▁", "==", "==|", "=====|"], True),
           (["a", "---", "--", "+"], ["a", "--", "---", "+"], True),
           (["==|", "="], ["=", "=|="], False),  # a boundary moved across "|"
           (["ab", "c"], ["a", "bc"], False),  # not a run of one character
           (["a", "-"], ["a", "+"], False)]  # other text
  script = ("import json, sys; from check_tokenization import is_repeated_run_tie; "
            "print(json.dumps([is_repeated_run_tie(a, b) for a, b, _ in json.load(sys.stdin)]))")
  result = subprocess.run([sys.executable, "-c", script], input=json.dumps(cases),
                          cwd=os.path.join(REPO_ROOT, "tools"), capture_output=True, text=True,
                          check=True)
  assert json.loads(result.stdout) == [expected for _, _, expected in cases]
