"""run_classifier's settings: a GLUE task's (ClassifierSettings) and your own data files'
(OwnDataSettings), on what run_race's share (albert_tf.finetuning.settings). No TensorFlow: the
binary defines its flags from them."""

import dataclasses
from typing import Optional

from albert_tf.core import deprecation, errors, path_checks
from albert_tf.finetuning import settings as shared_settings

LABEL_TYPES = ("str", "float")
# The bounds of run_classifier's own flags (core.bounds: run_classifier registers them for cli):
# --classifier_dropout's, which the settings check as they are made (their field is
# ClassificationSettings').
FLAG_BOUNDS = dict(shared_settings.ClassificationSettings.FIELD_BOUNDS)
# --threshold's rule, for the flag's validator (run_classifier) and the settings alike.
THRESHOLD_RULE = ("must be above 0 and below 1 (a probability: at 0 or below every label is "
                  "predicted, at 1 or above none)")


def threshold_in_range(value):
  """Whether `value` is a multi-label threshold (THRESHOLD_RULE; NaN is not).

  Args:
    value: the threshold, a float.
  """
  return 0.0 < value < 1.0


def regression_label_list_error(label_list):
  """The UsageError refusing --label_list with --label_type=float: a regression has one output,
  a score, and no label names, so the list would be ignored.

  Args:
    label_list: --label_list's value (a string, or the names).
  """
  given = label_list if isinstance(label_list, str) else ",".join(label_list)
  return errors.UsageError(
      f"--label_list={given} with --label_type=float: a regression has no label names (its one "
      "output is a score); drop --label_list (regression) or --label_type=float (classes)")


# wanted_splits is every task's (albert_tf.finetuning.settings).
__getattr__ = deprecation.moved_names(__name__, {"wanted_splits": "albert_tf.finetuning.settings"})


@dataclasses.dataclass(kw_only=True)
class ClassifierSettings(shared_settings.ClassificationSettings):
  """run_classifier: a GLUE task (task_name) read from data_dir; features cached in cached_dir
  (default: output_dir)."""

  def check_inputs(self):
    """What the binary checks before the job loads TensorFlow: task_name is a GLUE task, and
    the TSV of each split the run reads is in data_dir (the task's folder in it, or data_dir
    being that folder). Remote paths are left to the job.

    Raises:
      errors.UsageError: naming --task_name or --data_dir, the file and the fix.
    """
    from albert_tf.tasks.classifier import data as glue  # the readers: not loaded for --help
    try:
      processor = glue.processor(self.task_name)
    except errors.UsageError as e:
      raise errors.UsageError(
          f"--task_name={self.task_name}: {e}; or give your own CSV, TSV or JSONL files "
          "(--train_file, --dev_file, --test_file) instead of --task_name") from None
    spec = processor.spec
    if not path_checks.is_local(self.data_dir):
      return
    for split in shared_settings.wanted_splits(self):
      if split in spec.files:  # a split the task lacks (ax's train) is the job's refusal
        path_checks.check_data_file(
            "data_dir", path_checks.in_folder_or_given(self.data_dir, spec.directory,
                                                       spec.files[split]),
            f"give --data_dir the GLUE data folder (holding {spec.directory}/"
            f"{spec.files[split]}) or the task's folder in it", given=self.data_dir)


@dataclasses.dataclass(kw_only=True)
class OwnDataSettings(ClassifierSettings):
  """run_classifier on CSV, TSV or JSONL files instead of a GLUE task (see
  albert_tf.tasks.classifier.own_data for how they are read).

  Args:
    train_file, dev_file, test_file: the splits' files (each needed by --do_train, --do_eval,
      --do_predict).
    data_format: csv, tsv or jsonl; None tells each file's by its extension.
    text_column, text_b_column, label_column: the fields (names; integers for a headerless
      CSV/TSV). text_b_column None: single sentences.
    label_type: "str" (classes) or "float" (regression: one output, squared error).
    label_separator: joins a row's labels (multi-label), or None.
    label_list: comma-separated label names in id order, or None.
    threshold: a label is predicted when its probability is above it (multi-label).

  Raises:
    UsageError: a split wanted without its file, an unknown label_type, a threshold outside
      (0, 1), a label_separator or a label_list with label_type float, or one column given for
      two roles.
  """
  task_name: str = "own"
  data_dir: Optional[str] = None
  train_file: Optional[str] = None
  dev_file: Optional[str] = None
  test_file: Optional[str] = None
  data_format: Optional[str] = None
  text_column: str = "text"
  text_b_column: Optional[str] = None
  label_column: str = "label"
  label_type: str = "str"
  label_separator: Optional[str] = None
  label_list: Optional[str] = None
  threshold: float = 0.5

  def check(self):
    super().check()
    if self.label_type not in LABEL_TYPES:
      raise errors.UsageError(f"--label_type={self.label_type}: one of {', '.join(LABEL_TYPES)}")
    if not threshold_in_range(self.threshold):
      raise errors.UsageError(f"--threshold={self.threshold}: {THRESHOLD_RULE}")
    if self.label_separator and self.label_type == "float":
      # A regression run with a separator would also be taken for multi-label.
      raise errors.UsageError(
          f"--label_separator={self.label_separator} with --label_type=float: a score is one "
          "number; drop --label_separator (multi-label) or --label_type=float (regression)")
    if self.label_list is not None and self.label_type == "float":
      raise regression_label_list_error(self.label_list)
    self._check_columns()
    for wanted, flag, path in ((self.do_train, "train_file", self.train_file),
                               (self.do_eval, "dev_file", self.dev_file),
                               (self.do_predict, "test_file", self.test_file)):
      if wanted and not path:
        what = {"train_file": "--do_train", "dev_file": "--do_eval",
                "test_file": "--do_predict"}[flag]
        raise errors.UsageError(f"{what} needs --{flag}")

  def check_inputs(self):
    """What the binary checks before the job loads TensorFlow: the file of each split the run
    reads (train_file, dev_file, test_file) is there. Remote paths are left to the job.

    Raises:
      errors.UsageError: naming the flag, the file and the fix.
    """
    for split, path in self.files().items():
      path_checks.check_data_file(f"{split}_file", path,
                                  "give the path of an existing .csv, .tsv or .jsonl file")

  def _check_columns(self):
    """Refuses one column as two of text, text_b and label (a label read as the text)."""
    given = [(flag, column) for flag, column in (
        ("text_column", self.text_column), ("text_b_column", self.text_b_column),
        ("label_column", self.label_column)) if column is not None]
    for i, (flag, column) in enumerate(given):
      for other, other_column in given[:i]:
        if column == other_column:
          raise errors.UsageError(
              f"--{flag}={column} is also --{other}: give each role its own column")

  def files(self):
    """{split: path} of the splits the run reads."""
    paths = {"train": self.train_file, "dev": self.dev_file, "test": self.test_file}
    return {split: paths[split] for split in shared_settings.wanted_splits(self)}
