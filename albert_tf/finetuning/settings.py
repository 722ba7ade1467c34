"""What the classification tasks' settings share (run_classifier's and run_race's): the task,
its data folder and the classification layer's dropout. No TensorFlow: the binaries define their
flags from them."""

import dataclasses
from typing import Optional

from albert_tf.core import bounds
from albert_tf.core.settings import FineTuningSettings


def wanted_splits(settings):
  """The splits a fine-tuning run reads: train (do_train), dev (do_eval), test (do_predict)."""
  return [split for split, wanted in (("train", settings.do_train), ("dev", settings.do_eval),
                                      ("test", settings.do_predict)) if wanted]


@dataclasses.dataclass(kw_only=True)
class ClassificationSettings(FineTuningSettings):
  """A classification task (task_name) read from data_dir; features cached in cached_dir
  (default: output_dir).

  Args:
    task_name, data_dir, cached_dir: as the original's flags.
    threshold_to_export: the threshold the export serves beside its predictions (nan: none).
    classifier_dropout: dropout on the pooled output before the classification layer.
  """
  task_name: str
  data_dir: str
  cached_dir: Optional[str] = None
  threshold_to_export: float = float("nan")
  classifier_dropout: float = 0.1
  FIELD_BOUNDS = {"classifier_dropout": bounds.DROPOUT}
