"""run_ner's settings (no TensorFlow: the binary defines its flags from them)."""

import dataclasses
from typing import Optional

from albert_tf.core import bounds, errors, path_checks
from albert_tf.core.settings import FineTuningSettings
from albert_tf.finetuning.settings import wanted_splits

# The bounds of run_ner's own flags and fields (core.bounds: run_ner registers them for cli;
# NerSettings checks them as it is made).
FLAG_BOUNDS = {"doc_stride": bounds.count(1), "dropout_prob": bounds.DROPOUT}


@dataclasses.dataclass(kw_only=True)
class NerSettings(FineTuningSettings):
  """run_ner: CoNLL files read from data_dir; features cached in cached_dir (default:
  output_dir).

  Args:
    data_dir: holds train.txt, dev.txt, test.txt (or eng.train, eng.testa, eng.testb).
    cached_dir: where the train and dev feature files are cached.
    doc_stride: how far each window of a long sentence starts after the previous one, in pieces.
    label_list: comma-separated tags in id order, or None (the checkpoint's, else the training
      set's).
    dropout_prob: dropout on the sequence output before the tagging layer.
    char_level: split each word's CJK characters into words of their own, the tags spread over
      them (data.char_level): training, predictions and metrics at character level; the
      SavedModel splits raw text the same way.

  Raises:
    UsageError: a field out of its bounds (core.bounds and FLAG_BOUNDS), as each settings class:
      a doc_stride or batch size below 1 (a doc_stride of 0 would cut a long sentence into
      windows forever).
  """
  data_dir: str
  cached_dir: Optional[str] = None
  doc_stride: int = 128
  label_list: Optional[str] = None
  dropout_prob: float = 0.1
  char_level: bool = False
  FIELD_BOUNDS = FLAG_BOUNDS

  def check_inputs(self):
    """What the binary checks before the job loads TensorFlow: data_dir holds the file of each
    split the run reads (data.split_file: train.txt or eng.train, ...). A remote data_dir is
    left to the job.

    Raises:
      errors.UsageError: naming --data_dir, the files it looked for and the fix.
    """
    if not path_checks.is_local(self.data_dir):
      return
    from albert_tf.tasks.ner import data  # the readers: not loaded for --help
    path_checks.check_data_dir("data_dir", self.data_dir, "give the folder of the CoNLL files")
    for split in wanted_splits(self):
      try:
        data.split_file(self.data_dir, split)
      except data.NerDataError as e:
        raise errors.UsageError(f"{e}: give the folder that holds them") from None
