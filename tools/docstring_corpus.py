"""A pretraining corpus from the prose of the Python standard library's docstrings.

  python tools/docstring_corpus.py --output_file=stdlib.txt [--max_documents=3000]

Every Python installation ships its standard library's sources, under the PSF License (a
permissive licence): their module, class and function docstrings are hundreds of short texts on
many subjects (mail, archives, dates, networking, numbers, text ...). Each docstring's prose
becomes one document of create_pretraining_data's input format: a sentence a line, a blank line
between documents. Code examples (`>>>` and indented blocks), lists and argument tables are left
out; a docstring with fewer than --min_sentences sentences of prose is skipped.

The sources are parsed (ast), never imported: no module runs. Files are read in sorted order and
the documents sampled with --seed, so a Python version gives the same corpus on every machine.
No TensorFlow.
"""

import ast
import os
import random
import re
import sys
import sysconfig

from absl import flags

# Packages of the standard library that are tests, demos or tools rather than library prose.
SKIPPED_DIRS = ("test", "tests", "idlelib", "lib2to3", "tkinter", "turtledemo", "site-packages",
                "dist-packages", "ensurepip", "pydoc_data", "__pycache__", "venv")
# Sentence ends: a full stop, question or exclamation mark before a capital or an opening
# quote/bracket, not after a common abbreviation.
_SENTENCE_END = re.compile(r"(?<!\be\.g)(?<!\bi\.e)(?<!\betc)(?<!\bvs)(?<=[.!?])\s+(?=[A-Z\"'(])")
# A prose line: starts with a letter, a quote or a bracket and has no markup of a table or list.
_PROSE_START = re.compile(r"^[A-Za-z\"'(]")
_MIN_SENTENCE_CHARS = 20


def stdlib_dir():
  """The directory of the running Python's standard library sources."""
  return sysconfig.get_paths()["stdlib"]


def source_files(root):
  """The standard library's .py files under `root`, sorted, tests and tools left out."""
  found = []
  for directory, subdirs, files in os.walk(root):
    subdirs[:] = sorted(d for d in subdirs if d not in SKIPPED_DIRS and not d.startswith("."))
    found += [os.path.join(directory, f) for f in sorted(files)
              if f.endswith(".py") and not f.startswith("test_")]
  return found


def docstrings(path):
  """The module, class and function docstrings of one source file, in file order; [] for a file
  that does not parse (a standard library file for another Python version)."""
  try:
    with open(path, encoding="utf-8") as f:
      tree = ast.parse(f.read())
  except (SyntaxError, UnicodeDecodeError, ValueError):
    return []
  nodes = [tree] + sorted((n for n in ast.walk(tree) if isinstance(
      n, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))), key=lambda n: n.lineno)
  texts = (ast.get_docstring(n, clean=True) for n in nodes)
  return [t for t in texts if t]


def prose_sentences(docstring):
  """The sentences of a docstring's prose paragraphs: a paragraph is kept when every line of it
  is unindented prose (no code, list, table or doctest), its lines joined and split into
  sentences."""
  sentences = []
  for paragraph in re.split(r"\n\s*\n", docstring):
    lines = paragraph.splitlines()
    if not lines or not all(_PROSE_START.match(line) for line in lines):
      continue
    if any(line.rstrip().endswith(":") for line in lines):
      continue  # introduces a list or a code block: its sentence is cut off
    text = " ".join(line.strip() for line in lines)
    for sentence in _SENTENCE_END.split(text):
      sentence = sentence.strip()
      if len(sentence) >= _MIN_SENTENCE_CHARS and sentence[-1] in ".!?":
        sentences.append(sentence)
  return sentences


def documents(root=None, min_sentences=3):
  """Every docstring of the standard library under `root` (default: the running Python's) with
  at least `min_sentences` sentences of prose, as a list of sentences; each text once."""
  seen, found = set(), []
  for path in source_files(root or stdlib_dir()):
    for docstring in docstrings(path):
      sentences = prose_sentences(docstring)
      key = "\n".join(sentences)
      if len(sentences) >= min_sentences and key not in seen:
        seen.add(key)
        found.append(sentences)
  return found


def sample(found, max_documents, seed):
  """At most max_documents of `found`, drawn with `seed`, kept in their found order (0: all)."""
  if not max_documents or max_documents >= len(found):
    return list(found)
  chosen = sorted(random.Random(seed).sample(range(len(found)), max_documents))
  return [found[i] for i in chosen]


def main(argv):
  from albert_tf.core import errors
  if len(argv) > 1:
    raise errors.UsageError(f"unexpected arguments {argv[1:]}: every setting is a --flag")
  root = flags.FLAGS.stdlib_dir or stdlib_dir()
  if not os.path.isdir(root):
    raise FileNotFoundError(f"--stdlib_dir: no such directory: {root}: give a directory of "
                            "Python sources")
  found = documents(root, flags.FLAGS.min_sentences)
  docs = sample(found, flags.FLAGS.max_documents, flags.FLAGS.seed)
  if not docs:
    raise errors.UsageError(f"--stdlib_dir={root}: no docstring has "
                            f"{flags.FLAGS.min_sentences} sentences of prose")
  from albert_tf.data.corpus import write_corpus_documents
  write_corpus_documents(docs, flags.FLAGS.output_file)
  print(f"wrote {flags.FLAGS.output_file}: {len(docs)} documents "
        f"({sum(len(d) for d in docs)} sentences) of {len(found)} found in {root} "
        f"(Python {sys.version.split()[0]})")


def define_flags():
  flags.DEFINE_string("output_file", None, "Where to write the corpus.")
  flags.DEFINE_string("stdlib_dir", None,
                      "Python sources to read (default: the running Python's standard library).")
  flags.DEFINE_integer("max_documents", 0, "At most this many documents, sampled with --seed "
                       "(0: every one found).", lower_bound=0)
  flags.DEFINE_integer("min_sentences", 3, "Fewest prose sentences a docstring needs to be a "
                       "document.", lower_bound=1)
  flags.DEFINE_integer("seed", 1, "Seed of the sample of --max_documents.")


if __name__ == "__main__":
  sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
  from albert_tf.core import cli
  define_flags()
  cli.run(main, required_flags=("output_file",))
