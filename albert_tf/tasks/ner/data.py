"""CoNLL-2003-format reading: one word a line with its tag in the last column, a blank line
between sentences, `-DOCSTART-` lines skipped; and the label list of a run.

Imports no TensorFlow. Any tag scheme reads (IOB1, IOB2, IOBES): tags are kept as written, and
only the metric (albert_tf.tasks.ner.metrics) interprets them.
"""

import dataclasses
import os
from typing import Optional

from albert_tf import errors, io

# Each split's file names, in the order they are looked for (CoNLL-2003's own names second).
SPLIT_FILES = {"train": ("train.txt", "eng.train"), "dev": ("dev.txt", "eng.testa"),
               "test": ("test.txt", "eng.testb")}
OUTSIDE = "O"
_DOCSTART = "-DOCSTART-"


class NerDataError(errors.DataFormatError):
  """Malformed input data; the message names the file and line."""


@dataclasses.dataclass(frozen=True)
class Sentence:
  """One sentence of a CoNLL file.

  Args:
    words: its words.
    tags: one tag per word, or None when the file has no tag column.
    line: the 1-based line number of its first word (named in errors).
  """
  words: tuple
  tags: Optional[tuple]
  line: int


def split_file(data_dir: str, split: str) -> str:
  """The file of `split` (train, dev, test) in data_dir: train.txt or eng.train, etc.

  Raises:
    NerDataError: when neither name exists (naming both).
  """
  for name in SPLIT_FILES[split]:
    path = os.path.join(data_dir, name)
    if io.exists(path):
      return path
  names = " or ".join(SPLIT_FILES[split])
  raise NerDataError(f"no {split} file in --data_dir={data_dir}: expected {names}")


def read_conll(path: str, require_tags: bool = True) -> list:
  """The sentences of a CoNLL file.

  A file is tagged when any word line has two or more columns; then every word line must have
  its tag (the last column). An untagged file (one column everywhere) is accepted only without
  `require_tags` (a test set to predict).

  Args:
    path: the file (any TF file system).
    require_tags: raise when the file has no tag column (training and dev sets).

  Returns:
    A non-empty list of Sentence, in file order.

  Raises:
    NerDataError: a word line without a tag in a tagged file (or in any file with
      require_tags), or a file with no sentence; the message names file and line.
  """
  rows = []  # (line number, columns); None separates sentences
  for number, line in enumerate(io.read_text(path).splitlines(), start=1):
    columns = line.split()
    if not columns or columns[0] == _DOCSTART:
      rows.append(None)
    else:
      rows.append((number, columns))
  tagged = require_tags or any(r is not None and len(r[1]) > 1 for r in rows)
  sentences, current = [], []
  for row in rows + [None]:
    if row is not None:
      number, columns = row
      if tagged and len(columns) < 2:
        raise NerDataError(
            f"{path}:{number}: line {columns[0]!r} has no tag: each line needs the word and "
            "its tag in the last column (CoNLL format, columns separated by spaces)")
      current.append(row)
    elif current:
      words = tuple(c[0] for _, c in current)
      tags = tuple(c[-1] for _, c in current) if tagged else None
      sentences.append(Sentence(words, tags, current[0][0]))
      current = []
  if not sentences:
    raise NerDataError(f"{path}: no sentence (the file is empty, or holds only blank and "
                       f"{_DOCSTART} lines)")
  return sentences


def read_split(data_dir: str, split: str) -> list:
  """read_conll of a split's file; train and dev need tags, test may have none."""
  return read_conll(split_file(data_dir, split), require_tags=split != "test")


def labels_of(sentences) -> list:
  """The label list of a training set: `O` first (when present), then the other tags sorted,
  so that the same tags always give the same ids."""
  tags = {tag for s in sentences for tag in s.tags}
  return ([OUTSIDE] if OUTSIDE in tags else []) + sorted(tags - {OUTSIDE})


def parse_label_list(text: str) -> list:
  """--label_list: comma-separated tags, in id order.

  Raises:
    NerDataError: an empty list or a repeated tag.
  """
  labels = [t.strip() for t in text.split(",") if t.strip()]
  if not labels or len(set(labels)) != len(labels):
    raise NerDataError(f"--label_list={text!r}: give distinct comma-separated tags, e.g. "
                       "O,B-PER,I-PER")
  return labels


def check_tags(sentences, labels, path):
  """Raises NerDataError at the first tag outside `labels` (naming file, line and the fix)."""
  known = set(labels)
  for sentence in sentences:
    for offset, tag in enumerate(sentence.tags):
      if tag not in known:
        raise NerDataError(
            f"{path}:{sentence.line + offset}: tag {tag!r} is not in the label list "
            f"{labels}: add it to --label_list (or train without --label_list to take the "
            "training set's tags)")


