"""The checkout passes its linter: `ruff check` with ruff.toml (pyflakes, pycodestyle's errors,
lines of at most 100 characters, blind excepts, closures over loop variables), and every finding
silenced on its line says why (`# noqa: CODE -- why`). pylint is not run, so no comment names it."""

import io
import os
import re
import subprocess
import sys
import tokenize

import pytest

from repo_paths import REPO_ROOT

NOQA = re.compile(r"#\s*noqa\b(?::\s*(?P<codes>[A-Z]+[0-9]+(?:\s*,\s*[A-Z]+[0-9]+)*))?(?P<rest>.*)")


def _tracked_python_files():
  listed = subprocess.run(["git", "ls-files", "-z", "--", "*.py"], cwd=REPO_ROOT,
                          capture_output=True, check=True).stdout.decode("utf-8")
  return [p for p in listed.split("\0") if p and os.path.exists(os.path.join(REPO_ROOT, p))]


def _comments(path):
  """(line number, text) of each comment token of the file: not the text of strings."""
  with open(os.path.join(REPO_ROOT, path), "rb") as f:
    source = f.read()
  for token in tokenize.tokenize(io.BytesIO(source).readline):
    if token.type == tokenize.COMMENT:
      yield token.start[0], token.string


def problems_in_comments(path):
  """What is wrong with the file's lint comments: a bare noqa, a noqa giving no reason, a
  comment for a linter that does not run."""
  found = []
  for line, comment in _comments(path):
    if "pylint:" in comment:
      found.append(f"{path}:{line}: names pylint, which does not run: {comment}")
    match = NOQA.search(comment)
    if match is None:
      continue
    if not match.group("codes"):
      found.append(f"{path}:{line}: a noqa that names no rule: {comment}")
    elif not re.match(r"\s*--\s*\S", match.group("rest")):
      found.append(f"{path}:{line}: a noqa that gives no reason (`# noqa: CODE -- why`): "
                   f"{comment}")
  return found


def test_ruff_finds_nothing():
  result = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache",
                           "--output-format", "concise", "."],
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=300)
  if "No module named ruff" in result.stderr:
    pytest.fail("ruff is not installed: `python3 -m pip install -r requirements.txt`")
  assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]


def test_every_silenced_finding_says_why():
  found = [p for path in _tracked_python_files() for p in problems_in_comments(path)]
  assert not found, "\n".join(found)


def test_the_comment_check_sees_what_it_should(tmp_path, monkeypatch):
  source = ("import os  # noqa: F401 -- kept for callers\n"
            "import re  # noqa: F401\n"
            "import sys  # noqa\n"
            "x = 1  # pylint: disable=invalid-name\n"
            "s = '# noqa: F401'\n")
  (tmp_path / "sample.py").write_text(source, encoding="utf-8")
  monkeypatch.setattr(sys.modules[__name__], "REPO_ROOT", str(tmp_path))
  found = problems_in_comments("sample.py")
  assert [f.split(":")[1] for f in found] == ["2", "3", "4"], found
