"""run_classifier's settings for your own data files (no TensorFlow: the binary defines its flags
from them)."""

import dataclasses
from typing import Optional

from albert_tf import errors
from albert_tf.settings import ClassifierSettings

LABEL_TYPES = ("str", "float")


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
    UsageError: a split wanted without its file, or an unknown label_type.
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

  def __post_init__(self):
    if self.label_type not in LABEL_TYPES:
      raise errors.UsageError(f"--label_type={self.label_type}: one of {', '.join(LABEL_TYPES)}")
    for wanted, flag, path in ((self.do_train, "train_file", self.train_file),
                               (self.do_eval, "dev_file", self.dev_file),
                               (self.do_predict, "test_file", self.test_file)):
      if wanted and not path:
        what = {"train_file": "--do_train", "dev_file": "--do_eval",
                "test_file": "--do_predict"}[flag]
        raise errors.UsageError(f"{what} needs --{flag}")

  def files(self):
    """{split: path} of the splits the run reads."""
    return {split: path for split, wanted, path in (
        ("train", self.do_train, self.train_file), ("dev", self.do_eval, self.dev_file),
        ("test", self.do_predict, self.test_file)) if wanted}
