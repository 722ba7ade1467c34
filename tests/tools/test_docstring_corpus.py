"""tools/docstring_corpus.py: the prose of Python sources' docstrings as a pretraining corpus (a
sentence a line, documents apart), parsed and never imported, the same on every run."""

import os
import sys

import pytest

from helpers import REPO_ROOT
from tool_runs import error_line, run_tool

sys.path.insert(0, os.path.join(REPO_ROOT, "tools"))
import docstring_corpus

_MODULE = '''\
"""Archives of cabbages, kept in cool cellars. Each archive holds many heads.

A cellar is opened with open_cellar(). The heads are counted on the way in.
Nothing is thrown away.

Example:

    >>> open_cellar("north")
    <Cellar north>
"""

raise RuntimeError("importing this module would fail")


class Turnip:
  """One turnip. Too short to be a document."""

  def peel(self, depth):
    """Peels the turnip to `depth` millimetres. The peel is kept for the soup.
    A deeper peel wastes more of the turnip.

    Args:
      depth: how deep to peel.
    """


def weigh():
  """Weighs the harvest, e.g. a cart of beets. The scale is read twice. The two readings are
  averaged. Odd weights are written down!"""
'''


@pytest.fixture()
def sources(tmp_path):
  (tmp_path / "cellar.py").write_text(_MODULE)
  (tmp_path / "test").mkdir()
  (tmp_path / "test" / "test_cellar.py").write_text('"""A test. It is not prose. Skip it."""\n')
  (tmp_path / "broken.py").write_text('"""Not Python 3. It does not parse. Skip it."""\nprint 1\n')
  return tmp_path


def test_prose_is_kept_and_code_lists_and_short_docstrings_are_not(sources):
  assert docstring_corpus.documents(str(sources)) == [
      ["Archives of cabbages, kept in cool cellars.", "Each archive holds many heads.",
       "A cellar is opened with open_cellar().", "The heads are counted on the way in.",
       "Nothing is thrown away."],
      ["Peels the turnip to `depth` millimetres.", "The peel is kept for the soup.",
       "A deeper peel wastes more of the turnip."],
      ["Weighs the harvest, e.g. a cart of beets.", "The scale is read twice.",
       "The two readings are averaged.", "Odd weights are written down!"],
  ]
  # The paragraph introducing the example ("Example:") and the example itself are left out;
  # one docstring of 2 sentences is too short, unless fewer are asked for.
  assert len(docstring_corpus.documents(str(sources), min_sentences=4)) == 2


def test_sample_is_seeded_and_keeps_the_found_order():
  found = [[str(i)] for i in range(50)]
  first = docstring_corpus.sample(found, 10, seed=3)
  assert len(first) == 10 and first == sorted(first, key=lambda d: int(d[0]))
  assert docstring_corpus.sample(found, 10, seed=3) == first
  assert docstring_corpus.sample(found, 10, seed=4) != first
  assert docstring_corpus.sample(found, 0, seed=3) == found


def test_the_standard_library_gives_hundreds_of_documents_on_many_subjects():
  found = docstring_corpus.documents()
  assert len(found) > 500
  assert all(len(d) >= 3 for d in found)
  text = " ".join(" ".join(d) for d in found)
  for subject in ("socket", "archive", "calendar", "decimal", "thread", "message"):
    assert subject in text, subject
  assert ">>>" not in text


def test_the_tool_writes_the_corpus(sources, tmp_path):
  out = tmp_path / "corpus.txt"
  result = run_tool("docstring_corpus.py", f"--stdlib_dir={sources}", f"--output_file={out}")
  assert result.returncode == 0, result.stderr
  assert "wrote" in result.stdout and "3 documents (12 sentences) of 3 found" in result.stdout
  documents = out.read_text().strip().split("\n\n")
  assert [len(d.splitlines()) for d in documents] == [5, 3, 4]


def test_no_prose_is_one_error_line(tmp_path):
  (tmp_path / "empty.py").write_text("x = 1\n")
  result = run_tool("docstring_corpus.py", f"--stdlib_dir={tmp_path}",
                    f"--output_file={tmp_path / 'c.txt'}")
  assert error_line(result, 2).startswith("error: --stdlib_dir=")
  missing = run_tool("docstring_corpus.py", f"--stdlib_dir={tmp_path / 'no'}",
                     f"--output_file={tmp_path / 'c.txt'}")
  assert "no such directory" in error_line(missing, 1)
  assert not (tmp_path / "c.txt").exists()
