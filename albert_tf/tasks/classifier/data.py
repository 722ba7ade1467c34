"""GLUE task data as the original's processors read it (classifier_utils.*Processor).

Each task is described by a `TaskSpec` (its folder, files, labels and which TSV column holds what)
instead of one class per task; `processor(task_name, use_spm, do_lower_case)` returns an object
with the original processor's methods (get_train_examples, get_dev_examples, get_test_examples,
get_labels).
"""

import csv
import dataclasses
import math
import re
from typing import Optional

from albert_tf.core import errors
from albert_tf.core import io, path_checks
# Shared with RACE (albert_tf.finetuning); PaddingInputExample is read from here too.
from albert_tf.finetuning.text_data import (  # noqa: F401 -- re-exported, see above
    PaddingInputExample, TextProcessor)


@dataclasses.dataclass
class InputExample:
  """One example: guid, text_a, optional text_b, label (str; float for STS-B)."""
  guid: str
  text_a: str
  text_b: Optional[str] = None
  label: object = None


@dataclasses.dataclass(frozen=True)
class Columns:
  """Where a split's fields are. guid None: "<split>-<row index>" as the original names rows
  that have no id column. label None: the split has no labels (test)."""
  text_a: int
  text_b: Optional[int]
  label: Optional[int]
  guid: Optional[int] = None
  raw_guid: bool = False  # the original keeps some id columns unprocessed


@dataclasses.dataclass(frozen=True)
class TaskSpec:
  directory: str
  files: dict            # split -> file name
  labels: tuple          # (None,) for regression
  columns: dict          # split -> Columns; "dev" defaults to "train"
  header_splits: tuple = ("train", "dev", "test")
  skip_short_rows: bool = False  # QQP: a train/dev row without enough columns is skipped

  @property
  def regression(self):
    return self.labels == (None,)

  def columns_for(self, split):
    return self.columns.get(split) or self.columns["train"]


_NLI = ("contradiction", "entailment", "neutral")
_BINARY = ("0", "1")
_ENTAIL = ("entailment", "not_entailment")
_SPLIT_FILES = {"train": "train.tsv", "dev": "dev.tsv", "test": "test.tsv"}
# index, sentence1, sentence2, label (QNLI, RTE, WNLI).
_PAIR_WITH_INDEX = {"train": Columns(1, 2, -1, guid=0), "test": Columns(1, 2, None, guid=0)}
_MNLI_COLUMNS = {"train": Columns(8, 9, -1, guid=0), "test": Columns(8, 9, None, guid=0)}

TASKS = {
    "cola": TaskSpec("CoLA", _SPLIT_FILES, _BINARY,
                     {"train": Columns(3, None, 1), "test": Columns(1, None, None, guid=0,
                                                                    raw_guid=True)},
                     header_splits=("test",)),
    "mnli": TaskSpec("MNLI", {"train": "train.tsv", "dev": "dev_matched.tsv",
                              "test": "test_matched.tsv"}, _NLI, _MNLI_COLUMNS),
    "mismnli": TaskSpec("MNLI", {"train": "train.tsv", "dev": "dev_mismatched.tsv",
                                 "test": "test_mismatched.tsv"}, _NLI, _MNLI_COLUMNS),
    "mrpc": TaskSpec("MRPC", _SPLIT_FILES, _BINARY,
                     {"train": Columns(3, 4, 0), "test": Columns(3, 4, None, guid=0,
                                                                 raw_guid=True)}),
    "rte": TaskSpec("RTE", _SPLIT_FILES, _ENTAIL, _PAIR_WITH_INDEX),
    "sst-2": TaskSpec("SST-2", _SPLIT_FILES, _BINARY,
                      {"train": Columns(0, None, 1), "test": Columns(1, None, None, guid=0)}),
    "sts-b": TaskSpec("STS-B", _SPLIT_FILES, (None,),
                      {"train": Columns(7, 8, -1, guid=0), "test": Columns(7, 8, None, guid=0)}),
    "qqp": TaskSpec("QQP", _SPLIT_FILES, _BINARY,
                    {"train": Columns(3, 4, 5, guid=0, raw_guid=True),
                     "test": Columns(1, 2, None, guid=0, raw_guid=True)},
                    skip_short_rows=True),
    "qnli": TaskSpec("QNLI", _SPLIT_FILES, _ENTAIL, _PAIR_WITH_INDEX),
    "wnli": TaskSpec("WNLI", _SPLIT_FILES, _BINARY, _PAIR_WITH_INDEX),
    # The GLUE diagnostic set: test only, scored with an MNLI model.
    "ax": TaskSpec("diagnostic", {"test": "diagnostic.tsv"}, _NLI,
                   {"train": Columns(1, 2, -1, guid=0), "test": Columns(1, 2, None, guid=0)}),
}


def read_tsv(path):
  """Rows of a tab-separated file, no quoting (as the original's csv reader with quotechar None).
  """
  if not io.exists(path):
    raise FileNotFoundError(f"data file not found: {path}")
  with io.open_text(path, newline="") as f:
    return list(csv.reader(f, delimiter="\t", quotechar=None))


# A score as a data file may write it: digits with an optional sign, point and exponent. float()
# reads more: '1_000' (a Python literal's digit grouping), non-ASCII digits, 'nan', 'inf'.
_DECIMAL = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
SCORE_FIX = ("write each score as a plain decimal number (digits with an optional sign, point "
             "and exponent, as 1000, -2.5 or 1e-3)")


def read_score(value):
  """(the score as a float, None), or (None, why `value` is no score: "not a number", "not a
  finite number" or "not a plain decimal number"); SCORE_FIX says how to write one.

  float() alone reads '1_000' as 1000, 'nan' and 'inf' as themselves and '1e500' as inf, and a
  JSON integer too large for a float raises OverflowError: each would train on a score that is
  not the one written, or fail with a traceback.

  Args:
    value: a text (a CSV/TSV field or a JSON string; whitespace around it is allowed) or a JSON
      number (a JSON true is no number, though bool is an int).
  """
  if isinstance(value, bool) or not isinstance(value, (str, int, float)):
    return None, "not a number"
  try:
    number = float(value)
  except ValueError:
    return None, "not a number"
  except OverflowError:  # an integer past float's range
    return None, "not a finite number"
  if not math.isfinite(number):
    return None, "not a finite number"
  if isinstance(value, str) and not _DECIMAL.fullmatch(value.strip()):
    return None, "not a plain decimal number"
  return number, None


def one_class(examples):
  """The one label that every one of `examples` has (a name, a score, or a multi-label
  example's sorted names), or None when they have two or more.

  Trained on one class, a model learns nothing: a classifier whose only label name is that one
  has one softmax output, so its loss is 0 and its accuracy 1 from the first step; with more
  names, a regression on one score, or multi-label rows that all have the same labels (every
  sigmoid's target constant), it learns to answer that one label and looks perfect on data
  alike. A multi-label set of one label name is a yes/no classifier, one class only when every
  row has it (or none does); a label that is on (or off) in every row beside others that vary
  is not refused.

  Args:
    examples: the training set's InputExamples.
  """
  seen = {tuple(sorted(set(e.label))) if isinstance(e.label, list) else e.label
          for e in examples}
  if len(seen) != 1:
    return None
  [label] = seen
  return list(label) if isinstance(label, tuple) else label


def one_class_error(path, label, regression=False, multi_label=False):
  """The DataFormatError refusing a training file whose examples all have `label` (one_class).

  Args:
    path: the training file.
    label: the one label (name, score, or list of names).
    regression, multi_label: the kind of labels.
  """
  if regression:
    return errors.DataFormatError(
        f"{path}: every training example has the score {label!r}: a regression trained on one "
        "value only learns to answer it; give training data whose scores vary")
  if multi_label:
    labels = ", ".join(repr(name) for name in label) if label else "none"
    return errors.DataFormatError(
        f"{path}: every training example has the same labels ({labels}): a multi-label "
        "classifier trained on one set of labels only learns to answer it; give training data "
        "with at least two different sets of labels")
  return errors.DataFormatError(
      f"{path}: every training example has the label {label!r}: a classifier trained on one "
      "class only learns to answer it (loss 0, accuracy 1); give training data with at least "
      "two classes")


class GlueProcessor(TextProcessor):
  """The original processor of one task: reads its TSVs into InputExamples."""

  def __init__(self, task_name, use_spm=True, do_lower_case=True):
    super().__init__(use_spm, do_lower_case)
    name = task_name.lower()
    if name not in TASKS:
      raise errors.UsageError(f"Task not found: {task_name} (known: {', '.join(sorted(TASKS))})")
    self.task_name = name
    self.spec = TASKS[name]

  @property
  def regression(self):
    return self.spec.regression

  def get_labels(self):
    return list(self.spec.labels)

  def get_examples(self, data_dir, split):
    """The split's InputExamples, read from its TSV under data_dir (or data_dir itself being the
    task's folder).

    Args:
      data_dir: glue_data, or the task's folder in it.
      split: train, dev or test.

    Raises:
      errors.UsageError: a split the task does not have.
      errors.DataFormatError: a malformed row (create_examples), no rows, or a training set
        whose examples all have one label (or, STS-B, one score): see one_class.
    """
    spec = self.spec
    if split not in spec.files:
      raise errors.UsageError(f"task {self.task_name} has no {split} set")
    # --data_dir may be the task's folder (glue_data/MRPC) rather than glue_data.
    path = path_checks.in_folder_or_given(data_dir, spec.directory, spec.files[split])
    examples = self.create_examples(read_tsv(path), split, path)
    if not examples:
      # An empty dev or test set would fail only once training is over.
      raise errors.DataFormatError(
          f"{path} has no examples: give the {split} set's rows (tab-separated, "
          f"as GLUE's {spec.directory} files)")
    if split == "train":  # the task's 2 or 3 outputs, trained on one, learn to answer it
      label = one_class(examples)
      if label is not None:
        raise one_class_error(path, label, spec.regression)
    return examples

  def create_examples(self, rows, split, path=None):
    """InputExamples of a split's TSV rows; a malformed row (too few columns, an STS-B score
    that is not a plain decimal number: read_score) is an error naming the file (path) and its
    line."""
    spec = self.spec
    cols = spec.columns_for(split)
    skip_header = split in spec.header_splits
    where = path or f"{self.task_name} {split}"
    examples, seen = [], {}
    for i, row in enumerate(rows):
      if i == 0 and skip_header:
        continue
      try:
        example = self._example(row, i, split, cols)
      except IndexError:
        if spec.skip_short_rows and split != "test":
          continue
        raise errors.DataFormatError(
            f"{where}: row {i} has {len(row)} columns (line {i + 1}); expected "
            f"the {spec.directory} layout") from None
      except ValueError as e:  # a score that is not a number (STS-B)
        raise errors.DataFormatError(f"{where}: row {i} (line {i + 1}): {e}") from None
      if example.guid in seen:  # predictions are written by guid: one would hide the other
        first = seen[example.guid]
        raise errors.DataFormatError(
            f"{where}: guid {example.guid!r} is used twice, by row {first} (line "
            f"{first + 1}) and row {i} (line {i + 1}): give each row its own id")
      seen[example.guid] = i
      examples.append(example)
    return examples

  def _example(self, row, index, split, cols):
    if cols.guid is None:
      guid = f"{split}-{index}"
    else:
      guid = row[cols.guid] if cols.raw_guid else self.process_text(row[cols.guid])
    text_a = self.process_text(row[cols.text_a])
    text_b = None if cols.text_b is None else self.process_text(row[cols.text_b])
    if cols.label is None:  # unlabelled test rows get the first label (0 for regression)
      label = 0 if self.spec.regression else self.spec.labels[0]
    elif self.spec.regression:
      text = row[cols.label]
      label, problem = read_score(text)
      if problem == "not a number":  # float()'s own message, as before
        raise ValueError(f"could not convert string to float: {text!r}")
      if problem:
        raise ValueError(f"score {text!r} is {problem}: {SCORE_FIX}")
    else:
      label = self.process_text(row[cols.label])
    return InputExample(guid=guid, text_a=text_a, text_b=text_b, label=label)


def processor(task_name, use_spm=True, do_lower_case=True):
  return GlueProcessor(task_name, use_spm, do_lower_case)
