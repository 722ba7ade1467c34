"""Your own classification data for run_classifier: CSV, TSV or JSON-lines files with named (or,
headerless, numbered) columns, read into the GLUE path's InputExamples. No TensorFlow.

Columns: --text_column, optional --text_b_column and --label_column name a CSV's or TSV's header
fields or a JSON line's keys. A CSV or TSV file whose columns are all given as integers (0-based)
is headerless: its first line is data. The files are read strictly by
tasks.classifier.own_files (formats, quoting, line numbers); this module makes examples of their
rows.

Labels: single-label (a string per row), multi-label (a JSON list, or a string joined by
--label_separator; an empty string is no label) or regression (--label_type=float). A test file
may have no label column. A bad row is a DataFormatError naming the file and its line: a missing
or null column, an empty text, more fields than the header (an unquoted comma, a tab inside a
TSV field), a header or JSON object naming a field twice, an unknown label, an empty label name
or one holding a comma, tab, line break or the label separator (the outputs join names with
them), one number written two ways (JSON 1 and 1.0: two classes), a JSON number label past a
float's range, a score that is not a finite plain decimal number ('1_000', 'nan', '1e500').
Labels that leave one class to learn (a single-label --label_list of one name, a training set
whose rows all have one label or one score) are refused by check_classes.
"""

import dataclasses
import math
import os
from typing import Optional

from albert_tf.core import errors
from albert_tf.checkpoints import labels
from albert_tf.finetuning.text_data import TextProcessor
from albert_tf.tasks.classifier.data import (SCORE_FIX, InputExample, one_class, one_class_error,
                                             read_score)
from albert_tf.tasks.classifier.own_files import file_format, read_rows
from albert_tf.tasks.classifier.settings import regression_label_list_error

SPLITS = ("train", "dev", "test")


@dataclasses.dataclass(frozen=True)
class OwnDataSpec:
  """Where a run's own data is and how to read it (run_classifier's flags of the same names).

  Args:
    files: {split: path} of the splits given (train, dev, test).
    text_column, text_b_column, label_column: header names or JSON keys; integers (as strings
      of digits) for a headerless CSV/TSV.
    data_format: one of FORMATS, or None to tell each file's by its extension.
    label_type: "str" (classification) or "float" (regression).
    label_separator: joins a row's labels in a multi-label string column, or None.
    label_list: the label names in id order, or None (from the checkpoint or training set).
  """
  files: dict
  text_column: str = "text"
  text_b_column: Optional[str] = None
  label_column: str = "label"
  data_format: Optional[str] = None
  label_type: str = "str"
  label_separator: Optional[str] = None
  label_list: Optional[tuple] = None

  @property
  def regression(self) -> bool:
    return self.label_type == "float"

  @property
  def pair(self) -> bool:
    return self.text_b_column is not None

  def columns(self):
    return [c for c in (self.text_column, self.text_b_column, self.label_column) if c is not None]

  def headerless(self) -> bool:
    """A CSV/TSV without a header: every column given as an index."""
    return all(str(c).isdigit() for c in self.columns())


def _field(row, column):
  """row's value of column, or None when the row has no such field."""
  if isinstance(row, list):
    index = int(column)
    return row[index] if index < len(row) else None
  return row.get(column)


def _value(row, column, where):
  """row's value of column.

  Raises:
    errors.DataFormatError: the row has no such field, or (JSON) it is null.
  """
  value = _field(row, column)
  if value is None:
    if isinstance(row, dict) and column in row:
      raise errors.DataFormatError(f"{where}: column {column!r} is null: give it a value (or "
                                   "drop the row)")
    raise _missing(where, column, row)
  return value


def _missing(where, column, row):
  have = (f"{len(row)} fields" if isinstance(row, list) else
          f"fields {', '.join(map(str, row)) or '(none)'}")
  return errors.DataFormatError(
      f"{where}: no column {column!r} (the row has {have}): give each row that column, or the "
      "column's name with --text_column / --text_b_column / --label_column")


class OwnDataProcessor(TextProcessor):
  """Reads an OwnDataSpec's files into InputExamples (guid: the row's index from 0).

  Rows are read and checked once (read_split); labels are checked once the label names are
  known (check_labels). An example's label is a name (single-label), a list of names
  (multi-label) or a float (regression); unlabelled test rows get the first label, [] or 0.
  """

  def __init__(self, spec: OwnDataSpec, use_spm=True, do_lower_case=True):
    super().__init__(use_spm, do_lower_case)
    self.spec = spec
    self._read = {}
    self.multi_label = bool(spec.label_separator)
    # {a label's number: (its name, whether a JSON number, where)}: see _check_spelling.
    self._numbers = {}

  @property
  def regression(self):
    return self.spec.regression

  def read_split(self, split):
    """[(line, InputExample with its label as read)] of a split (cached)."""
    if split in self._read:
      return self._read[split]
    spec, path = self.spec, self.spec.files[split]
    data_format = file_format(path, spec.data_format)
    headerless = data_format != "jsonl" and spec.headerless()
    if data_format == "jsonl" and any(str(c).isdigit() for c in spec.columns()):
      raise errors.UsageError(f"{path} is JSON lines: name its fields (--text_column=text), not "
                              "column numbers")
    rows = read_rows(path, data_format, headerless)
    if not rows:
      raise errors.DataFormatError(f"{path} has no rows: give the {split} set's examples")
    # A test file may come without labels: every row then has none.
    labelled = split != "test" or _field(rows[0][1], spec.label_column) is not None
    read = []
    for index, (line, row) in enumerate(rows):
      where = f"{path}:{line}"
      texts = [None if column is None else self.process_text(_text(row, column, where))
               for column in (spec.text_column, spec.text_b_column)]
      label = self._label(_value(row, spec.label_column, where), where) if labelled else None
      read.append((line, InputExample(guid=str(index), text_a=texts[0], text_b=texts[1],
                                      label=label)))
    self._read[split] = read
    return read

  def _label(self, value, where):
    """A row's label as read: a name, a list of names (multi-label) or a float (regression)."""
    spec = self.spec
    if spec.regression:
      return _score(value, where, spec.label_column)
    if isinstance(value, list):
      self.multi_label = True
      return [self._name(v, where) for v in value]
    if isinstance(value, str) and spec.label_separator:
      return [self._name(name, where) for name in value.split(spec.label_separator)
              if name.strip()]  # "" (or "a||b"'s middle) is no label
    return self._name(value, where)

  def _name(self, value, where):
    """One label name (a JSON number as its text, stripped), checked: a string or number, not
    empty, and nothing that the outputs use to join names (label_name_problem)."""
    column = self.spec.label_column
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    name = value.strip() if isinstance(value, str) else str(value) if number else None
    if not name:
      raise errors.DataFormatError(
          f"{where}: label {value!r} in column {column!r}: give a label name"
          + ("" if self.spec.label_separator else ", a list of names"))
    if isinstance(value, float) and not math.isfinite(value):
      # JSON has no inf: a number past a float's range (1e500) reads as one, the class 'inf'.
      raise errors.DataFormatError(
          f"{where}: label {value!r} in column {column!r} is a JSON number past a float's range: "
          "write the label as a JSON string")
    problem = label_name_problem(name, self.spec.label_separator)
    if problem:
      raise errors.DataFormatError(f"{where}: label {name!r} in column {column!r} {problem}")
    self._check_spelling(name, number, where)
    return name

  def _check_spelling(self, name, json_number, where):
    """Refuses a label that is the number of another label written another way when either is a
    JSON number: JSON 1 and 1.0 read as '1' and '1.0', two classes for one value. (Strings
    such as '1.1' and '1.10' may be codes, and stay apart.)"""
    try:
      number = float(name)
    except ValueError:
      return
    if not math.isfinite(number):
      return
    first_name, first_json, first_where = self._numbers.setdefault(
        number, (name, json_number, where))
    if first_name != name and (json_number or first_json):
      raise errors.DataFormatError(
          f"{where}: label {name!r} is label {first_name!r} of {first_where} written another "
          "way: they would be two classes; write every label of one class the same way (as "
          "JSON 1 or 1.0, or \"1\", not several)")

  def labels_of_training_set(self):
    """The sorted label names of the train split."""
    names = set()
    for _, example in self.read_split("train"):
      names.update(example.label if isinstance(example.label, list) else [example.label])
    return sorted(names)

  def check_labels(self, split, label_names):
    """Refuses a row whose label is not one of label_names (file and line named)."""
    if self.regression:
      return
    known = set(label_names)
    for line, example in self.read_split(split):
      if example.label is None:
        continue
      for name in (example.label if isinstance(example.label, list) else [example.label]):
        if name not in known:
          raise errors.DataFormatError(
              f"{self.spec.files[split]}:{line}: unknown label {name!r} (the labels: "
              f"{', '.join(label_names)}): fix the row, or give every label with --label_list")

  def get_examples(self, data_dir, split):
    """The split's InputExamples (data_dir unused: the spec names the files), unlabelled test
    rows given the first label, no label (multi-label) or 0 (regression)."""
    del data_dir
    examples = []
    for _, example in self.read_split(split):
      if example.label is None:
        example = dataclasses.replace(example, label=self._placeholder_label())
      elif self.multi_label and isinstance(example.label, str):
        example = dataclasses.replace(example, label=[example.label])  # one JSON label
      examples.append(example)
    return examples

  def _placeholder_label(self):
    if self.regression:
      return 0.0
    if self.multi_label:
      return []
    return self.label_names[0]

  def problem_type(self):
    if self.regression:
      return labels.REGRESSION
    return labels.MULTI_LABEL if self.multi_label else labels.SINGLE_LABEL


def _text(row, column, where):
  """A row's text in column: a string (a JSON number as its text), not blank."""
  value = _value(row, column, where)
  if isinstance(value, (bool, list, dict)):
    raise errors.DataFormatError(
        f"{where}: column {column!r} holds a JSON {type(value).__name__}, not a text: give it "
        "a string")
  value = str(value)
  if not value.strip():
    raise errors.DataFormatError(f"{where}: column {column!r} is empty: give every row a text "
                                 "(or drop the row)")
  return value


def _score(value, where, column):
  """A regression label as a float: a JSON number or a text written as a plain decimal number
  (data.read_score: not '1_000', 'nan', 'inf', '1e500', nor a JSON true, though bool is an int).
  """
  number, problem = read_score(value)
  if problem:
    raise errors.DataFormatError(f"{where}: label {value!r} in column {column!r} is {problem} "
                                 f"(--label_type=float): {SCORE_FIX}")
  return number


def label_name_problem(name, separator=None):
  """Why `name` cannot be a label name, or None. Names are written out joined (a multi-label
  row's in submit_results.tsv and the SavedModel's `label`: by the separator, else commas) and
  read back from --label_list (commas) and .tsv files (tabs, line breaks): one holding any of
  these would read back as other names.

  Args:
    name: the label name.
    separator: --label_separator, or None.
  """
  for char, what in ((separator, f"the label separator {separator!r}"), (",", "a comma"),
                     ("\t", "a tab"), ("\n", "a line break"), ("\r", "a line break")):
    if char and char in name:
      return (f"holds {what}: the outputs join a row's label names with commas (or "
              "--label_separator) and write tab-separated lines; rename the label")
  return None


def parse_label_list(value):
  """--label_list: comma-separated names, kept in the order given, none twice."""
  names = [name.strip() for name in value.split(",") if name.strip()]
  if len(set(names)) != len(names):
    raise errors.UsageError(f"--label_list={value} names a label twice")
  return names


def _check_label_list(names, separator):
  for name in names:
    problem = label_name_problem(name, separator)
    if problem:
      raise errors.UsageError(f"--label_list: label {name!r} {problem}")


def resolve_labels(processor, label_list, output_dir, init_checkpoint, training):
  """(label names, problem_type, where they came from) of an own-data run, in this order:
  --label_list, the output_dir being resumed (classifier_labels.json), the init checkpoint's
  (classifier_labels.json beside it, an HF directory's id2label), the training set (sorted).
  Names given or saved are checked against the checkpoint's (see labels.check_checkpoint_labels)
  and every split's rows against the names.

  Raises:
    errors.DataFormatError: a row with a label not among them.
    errors.CheckpointError: --label_list against the checkpoint's names.
    errors.ResumeMismatchError: output_dir trained with other labels or another problem type.
    errors.UsageError: no source at all (no --do_train, --label_list or labelled checkpoint), a
      --label_list name holding the separator, a tab or a line break, or a --label_list for
      regression data (label_type float).

  A run also calls check_classes with what this returns.
  """
  if processor.regression and label_list is not None:
    raise regression_label_list_error(label_list)
  saved = labels.read_classifier_labels(output_dir)
  from_checkpoint = labels.checkpoint_classifier_labels(init_checkpoint)
  for split in processor.spec.files:
    processor.read_split(split)  # a JSON list of labels in any makes the run multi-label
  if not training and any(found and found["problem_type"] == labels.MULTI_LABEL
                          for found in (saved, from_checkpoint)):
    processor.multi_label = True  # predicting with a multi-label model: its files may be bare
  problem_type = processor.problem_type()
  for source, found in ((output_dir, saved), (init_checkpoint, from_checkpoint)):
    if (found and found["problem_type"] != problem_type and
        not (training and source == init_checkpoint)):
      raise errors.ResumeMismatchError(
          f"{source} holds a {found['problem_type']} model but the data make a {problem_type} "
          "run: use another --output_dir / --init_checkpoint, or the matching --label_type / "
          "--label_separator")
  if processor.regression:
    names, source = [], "regression"
  elif label_list:
    names, source = list(label_list), "--label_list"
    _check_label_list(names, processor.spec.label_separator)
    if from_checkpoint and from_checkpoint["labels"]:
      labels.check_checkpoint_labels(names, init_checkpoint, training,
                                     names=from_checkpoint["labels"])
  elif saved:
    names, source = saved["labels"], os.path.join(output_dir, labels.CLASSIFIER_LABEL_FILE)
  elif from_checkpoint and from_checkpoint["labels"] and not training:
    names, source = from_checkpoint["labels"], init_checkpoint
  elif training:
    names, source = processor.labels_of_training_set(), "the training set"
  else:
    raise errors.UsageError(
        "no label list: give --label_list (comma-separated names), or --do_train (the training "
        "set's labels), or an --output_dir / --init_checkpoint of an own-data run_classifier "
        "model")
  if saved and not processor.regression and saved["labels"] != names:
    raise errors.ResumeMismatchError(
        f"--output_dir={output_dir} was trained with labels {saved['labels']}, not {names}: use "
        "another --output_dir, or drop --label_list")
  processor.label_names = names
  for split in processor.spec.files:
    processor.check_labels(split, names)
  return names, problem_type, source


def check_classes(processor, names, source, training):
  """Refuses labels that leave the model one class to learn (data.one_class): a single-label run
  with one label name (its one softmax output makes the loss 0 and the accuracy 1 whatever the
  text), and, training, a training set whose examples all have one label. For regression one
  class is one score: every row's the same. Multi-label data of one label name is a yes/no
  classifier and fine; it is one class when every row has the same labels (or none).

  Args:
    processor: the OwnDataProcessor that resolve_labels resolved.
    names: the label names resolve_labels returned.
    source: where they came from (resolve_labels' third value).
    training: whether the run trains (on processor's train split).

  Raises:
    errors.UsageError: a --label_list of one name for single-label data.
    errors.CheckpointError: an output_dir or checkpoint whose model has one label name.
    errors.DataFormatError: a training set of one class, naming the file and its label.
  """
  single_label = not (processor.regression or processor.multi_label)
  if single_label and len(names) == 1 and source != "the training set":
    if source == "--label_list":
      raise errors.UsageError(
          f"--label_list={names[0]} names one label: a classifier of one class answers it for "
          "every example (loss 0, accuracy 1); give at least two classes, or --label_separator "
          "for a yes/no label (multi-label)")
    raise errors.CheckpointError(
        f"{source} gives one label, {names[0]!r}: a classifier of one class answers it for "
        "every example; use a model trained on at least two classes")
  if training:
    label = one_class(processor.get_examples(None, "train"))
    if label is not None:
      raise one_class_error(processor.spec.files["train"], label, processor.regression,
                            processor.multi_label)
