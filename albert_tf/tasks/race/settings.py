"""run_race's settings (no TensorFlow: the binary defines its flags from them)."""

import dataclasses
import os
from typing import Optional

from albert_tf.core import bounds, errors, path_checks
from albert_tf.finetuning.settings import ClassificationSettings, wanted_splits

TASK_NAME = "race"
# The bounds of run_race's own flags and fields (core.bounds: run_race registers them for cli;
# RaceSettings checks them as it is made).
FLAG_BOUNDS = {"max_qa_length": bounds.count(1), "dropout_prob": bounds.DROPOUT}


@dataclasses.dataclass(kw_only=True)
class RaceSettings(ClassificationSettings):
  """run_race: RACE/{train,dev,test}/{middle,high} under data_dir; feature files train_file,
  eval_file, predict_file (default: race_<split>.tf_record in output_dir)."""
  task_name: str = TASK_NAME
  train_file: Optional[str] = None
  eval_file: Optional[str] = None
  predict_file: Optional[str] = None
  max_qa_length: int = 128
  high_only: bool = False
  middle_only: bool = False
  dropout_prob: float = 0.1
  SEQUENCES_PER_EXAMPLE = 4  # RACE's choices
  FIELD_BOUNDS = FLAG_BOUNDS

  def check(self):
    """ClassificationSettings' rules, and task_name is race (the original's one task, any case).

    Raises:
      errors.UsageError: as above.
    """
    super().check()
    if self.task_name.lower() != TASK_NAME:
      raise errors.UsageError(f"--task_name={self.task_name}: Task not found: {self.task_name} "
                              f"(run_race has one task, {TASK_NAME}): drop --task_name")

  def check_inputs(self):
    """What the binary checks before the job loads TensorFlow: the level folders of each split
    the run reads are in data_dir (RACE/<split>/<middle|high>). Remote paths are left to the
    job.

    Raises:
      errors.UsageError: naming --data_dir, the folder and the fix.
    """
    from albert_tf.tasks.race import data as race  # the readers: not loaded for --help
    levels = race.RaceProcessor(high_only=self.high_only, middle_only=self.middle_only).levels
    for split in wanted_splits(self):
      for level in levels:
        path_checks.check_data_dir(
            "data_dir", os.path.join(race.split_dir(self.data_dir, split), level),
            "give --data_dir the folder holding RACE/ (RACE/train, RACE/dev, RACE/test, each "
            "with middle/ and high/)", given=self.data_dir)
