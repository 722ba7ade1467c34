"""CoNLL-2003-format reading: one word a line with its tag in the last column, a blank line
between sentences, `-DOCSTART-` lines skipped; and the label list of a run.

Imports no TensorFlow. Any tag scheme reads (IOB1, IOB2, IOBES): tags are kept as written, and
only the metric (albert_tf.tasks.ner.metrics) interprets them.

Character level (run_ner --char_level): each word's CJK characters become words of their own,
each maximal run of other characters one word ("iPhone手机" -> "iPhone", "手", "机"), and the
word's tag is spread over its parts (split_tag). A file of one character a line (MSRA, People's
Daily) reads the same with or without it.
"""

import dataclasses
import os
from typing import Optional

from albert_tf.core import errors, io
from albert_tf.tokenization.text import is_cjk

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
    word_lines: the line of each word where they are not consecutive lines (words split from
      one line by char_level), else None.
  """
  words: tuple
  tags: Optional[tuple]
  line: int
  word_lines: Optional[tuple] = None

  def line_of(self, index: int) -> int:
    """The 1-based line of word `index`."""
    return self.word_lines[index] if self.word_lines is not None else self.line + index


def split_word(word: str) -> list:
  """A word's character-level parts: each CJK character (BERT's ranges, as WordPiece isolates
  them) alone, each maximal run of other characters one part."""
  parts = []
  for char in word:
    if is_cjk(ord(char)) or not parts or is_cjk(ord(parts[-1][-1])):
      parts.append(char)
    else:
      parts[-1] += char
  return parts


def split_tag(tag: str, count: int) -> Optional[list]:
  """The tags of a word's `count` parts, keeping its entity one entity in its scheme.

  O stays O on every part; B-X gives B-X then I-X; I-X gives I-X on every part (IOB1 and IOB2
  alike: still inside the entity); BIOES's E-X gives I-X ... then E-X and S-X gives B-X, I-X
  ..., E-X (S-X and E-X unchanged on a single part). Any other tag (an IO scheme's bare type,
  or another prefix) is None: it cannot be spread.
  """
  if count == 1 or tag == OUTSIDE:
    return [tag] * count
  prefix, _, type_ = tag.partition("-")
  if not type_ or prefix not in ("B", "I", "E", "S"):
    return None
  first = "B" if prefix in ("B", "S") else "I"
  last = "E" if prefix in ("E", "S") else "I"
  return [f"{first}-{type_}"] + [f"I-{type_}"] * (count - 2) + [f"{last}-{type_}"]


def char_level(sentences, path) -> list:
  """The sentences with every word split by split_word, its tag by split_tag.

  Raises:
    NerDataError: a word of several parts whose tag cannot be spread (naming file and line).
  """
  out = []
  for sentence in sentences:
    words, tags, lines = [], [] if sentence.tags is not None else None, []
    for index, word in enumerate(sentence.words):
      parts = split_word(word)
      words += parts
      lines += [sentence.line_of(index)] * len(parts)
      if tags is not None:
        spread = split_tag(sentence.tags[index], len(parts))
        if spread is None:
          raise NerDataError(
              f"{path}:{sentence.line_of(index)}: --char_level cannot split the tag "
              f"{sentence.tags[index]!r} of {word!r} over its {len(parts)} parts: it needs "
              "O or a B-, I-, E- or S- tag (IOB1, IOB2, IOBES); give one character a line "
              "instead")
        tags += spread
    out.append(Sentence(tuple(words), None if tags is None else tuple(tags), sentence.line,
                        tuple(lines)))
  return out


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


def read_split(data_dir: str, split: str, char_level_words: bool = False) -> list:
  """read_conll of a split's file; train and dev need tags, test may have none. With
  char_level_words, at character level (char_level)."""
  path = split_file(data_dir, split)
  sentences = read_conll(path, require_tags=split != "test")
  return char_level(sentences, path) if char_level_words else sentences


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
            f"{path}:{sentence.line_of(offset)}: tag {tag!r} is not in the label list "
            f"{labels}: add it to --label_list (or train without --label_list to take the "
            "training set's tags)")


