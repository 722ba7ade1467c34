"""run_race's settings (no TensorFlow: the binary defines its flags from them)."""

import dataclasses
from typing import Optional

from albert_tf.tasks.classifier.settings import ClassifierSettings


@dataclasses.dataclass(kw_only=True)
class RaceSettings(ClassifierSettings):
  """run_race: RACE/{train,dev,test}/{middle,high} under data_dir; feature files train_file,
  eval_file, predict_file (default: race_<split>.tf_record in output_dir)."""
  task_name: str = "race"
  train_file: Optional[str] = None
  eval_file: Optional[str] = None
  predict_file: Optional[str] = None
  max_qa_length: int = 128
  high_only: bool = False
  middle_only: bool = False
  dropout_prob: float = 0.1
  SEQUENCES_PER_EXAMPLE = 4  # RACE's choices
