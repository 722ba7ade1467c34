"""The README and docs/ speak of the project, not of the work that made it: no "session" in the
sense of a stretch of work ("measured this session"), no issue or pull-request numbers. A figure
says what was measured, on which CPU and on which date instead.

Code is not prose: fenced blocks and `inline code` are left out, so API names that hold the word
(`tf.compat.v1.Session`, `MonitoredTrainingSession`, ONNX Runtime's `InferenceSession` and its
`session.run`) are not flagged; nor are they in prose, where the word is part of a longer name or
follows a dot, nor pytest's session scope ("a session fixture", "session-scoped").
"""

import os
import re

import pytest

from helpers import REPO_ROOT

FENCED = re.compile(r"^( *)```.*?^\1```", re.M | re.S)
INLINE_CODE = re.compile(r"`[^`\n]*`")
# "session" on its own: not inside an identifier (MonitoredTrainingSession, session_config), an
# attribute (tf.Session) or pytest's scope (session-scoped, a session fixture).
SESSION = re.compile(r"(?<![\w.])sessions?(?![\w-]|\s+(?:fixtures?|scope)\b)", re.I)
ISSUE_NUMBER = re.compile(r"\b(?:issues?|pull requests?|PRs?)\s*#?\d+|(?<![\w&/])#\d+\b", re.I)


def _pages():
  pages = [os.path.join(REPO_ROOT, "README.md")]
  for directory, _, files in os.walk(os.path.join(REPO_ROOT, "docs")):
    pages += [os.path.join(directory, f) for f in sorted(files) if f.endswith(".md")]
  return pages


def _prose(text):
  """text with fenced blocks and inline code blanked, line numbers kept."""
  text = FENCED.sub(lambda m: "\n" * m.group(0).count("\n"), text)
  return INLINE_CODE.sub("``", text)


def work_log_words(text):
  """[(line number, line)] of the prose lines of a Markdown text that say "session" or cite an
  issue or pull-request number (a citation may run over a line break: the line it starts on)."""
  prose = _prose(text)
  lines = prose.splitlines()
  starts = sorted({prose.count("\n", 0, match.start())
                   for pattern in (SESSION, ISSUE_NUMBER) for match in pattern.finditer(prose)})
  return [(number + 1, lines[number].strip()) for number in starts]


@pytest.mark.parametrize("text", [
    "re-measured this session, 0.93 s per forward pass",
    "measured in an earlier session on this machine type",
    "in the previous session's run",
    "Sessions of work",
    "checks issue 38's bars",
    "what is left of Issue #38",
    "see PR 12",
    "fixed in #41",
    "the first two of issue\n38's changes",
])
def test_work_log_words_are_found(text):
  assert work_log_words(text) == [(1, text.splitlines()[0])]


@pytest.mark.parametrize("text", [
    "Load it with `tf.compat.v1.Session()` or a MonitoredTrainingSession.",
    "a tf.compat.v1.Session runs the original graph",
    "```python\nsession = onnxruntime.InferenceSession('albert.onnx')\nsession.run(None, {})\n```",
    "`session_config` and `tf.Session` are TF1's",
    "the paper's Table 4 and section 4.1; batch #size",
    "[the device check](speed.md#the-device-check), 2026-12-04",
    "the tests that share a session fixture run once; a session-scoped venv",
])
def test_code_and_api_names_are_not_flagged(text):
  assert work_log_words(text) == []


def test_no_page_speaks_of_sessions_or_issue_numbers():
  found = []
  for page in _pages():
    with open(page, encoding="utf-8") as f:
      found += [f"{os.path.relpath(page, REPO_ROOT)}:{number}: {line}"
                for number, line in work_log_words(f.read())]
  assert not found, ("say what was measured, on which CPU and date, instead of a session or an "
                     "issue number:\n" + "\n".join(found))
