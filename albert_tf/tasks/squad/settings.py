"""run_squad_v1 / run_squad_v2's settings (no TensorFlow: the binaries define their flags from
them)."""

import dataclasses
from typing import Optional

from albert_tf.core import bounds, path_checks
from albert_tf.core.settings import FineTuningSettings

# The bounds of SQuAD's own flags and fields (core.bounds: run_squad_v1/v2 register them for cli;
# SquadSettings checks them as it is made): a doc_stride of 0 would never advance its windows.
FLAG_BOUNDS = {
    **{name: bounds.count(1) for name in (
        "doc_stride", "max_query_length", "n_best_size", "max_answer_length", "start_n_top",
        "end_n_top")},
    "dropout_prob": bounds.DROPOUT,
}


@dataclasses.dataclass(kw_only=True)
class SquadSettings(FineTuningSettings):
  """run_squad_v1 / run_squad_v2 (v2=True), with the original's flags; the number of training
  steps comes from num_train_epochs."""
  v2: bool = False
  train_file: Optional[str] = None
  predict_file: Optional[str] = None
  train_feature_file: Optional[str] = None
  predict_feature_file: Optional[str] = None
  predict_feature_left_file: Optional[str] = None
  doc_stride: int = 128
  max_query_length: int = 64
  num_train_epochs: float = 3.0
  warmup_proportion: float = 0.1
  n_best_size: int = 20
  max_answer_length: int = 30
  metric: str = "squad"  # or "cmrc2018"
  start_n_top: int = 5
  end_n_top: int = 5
  dropout_prob: float = 0.1
  SPAN_HEAD = True
  STEPS_FROM_EPOCHS = True
  FIELD_BOUNDS = FLAG_BOUNDS

  def check_inputs(self):
    """What the binary checks before the job loads TensorFlow: the SQuAD json of each mode the
    run has is there (train_file with do_train, predict_file with do_predict). Remote paths are
    left to the job.

    Raises:
      errors.UsageError: naming the flag, the file and the fix.
    """
    for flag, path, wanted in (("train_file", self.train_file, self.do_train),
                               ("predict_file", self.predict_file, self.do_predict)):
      if wanted:
        path_checks.check_data_file(flag, path, "give the path of a SQuAD json file")
