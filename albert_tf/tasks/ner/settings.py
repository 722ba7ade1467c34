"""run_ner's settings (no TensorFlow: the binary defines its flags from them)."""

import dataclasses
from typing import Optional

from albert_tf.core.settings import FineTuningSettings


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
    UsageError: a field out of its bounds (core.bounds), as each settings class: a doc_stride
      or batch size below 1 (a doc_stride of 0 would cut a long sentence into windows forever).
  """
  data_dir: str
  cached_dir: Optional[str] = None
  doc_stride: int = 128
  label_list: Optional[str] = None
  dropout_prob: float = 0.1
  char_level: bool = False
