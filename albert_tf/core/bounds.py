"""The values a flag or a setting of a given name must keep: one table for the binaries' flags
(checked by cli once they parse) and the typed settings (checked as each is made), so that a job
run from Python refuses what its binary refuses:

  >>> from albert_tf.core import bounds
  >>> bounds.violation("train_batch_size", 0)
  'must be at least 1'
  >>> bounds.violation("random_seed", -1)
  "must be between 0 and 4294967295 (2**32 - 1: numpy's seeds are 32-bit)"
  >>> bounds.violation("train_batch_size", 32) is None
  True

Imports no TensorFlow and defines no flag: settings.py reads it, and --help answers at once.
"""

import dataclasses
import math
import numbers
from typing import NamedTuple, Optional

from albert_tf.core import errors

# The training and evaluation loops count the steps of one call in int32 (training.runner's
# tf.constant(steps, tf.int32)): a larger count wrapped (3,000,000,000 evaluation steps ran one
# batch). Every count is held to it: batch sizes and lengths (example indices are int32 too) far
# above what fits in memory.
INT32_MAX = 2**31 - 1
# numpy.random.seed (keras.utils.set_random_seed, create_pretraining_data's RandomState) takes
# 0 to 2**32 - 1; a seed outside ended in numpy's traceback.
SEED_MAX = 2**32 - 1
_INT32_WHY = " (2**31 - 1: the loops count in 32-bit integers)"
_SEED_WHY = " (2**32 - 1: numpy's seeds are 32-bit)"


class Bound(NamedTuple):
  """The values a flag (or setting) of one name must keep.

  low: the least value. high: the greatest, or None. why: what the range means, appended to
  the message (" (0: no warmup)"). high_why: where `high` is not part of the meaning but the
  most the code can hold (an int32 count), the reason, given only to a value above it.
  """
  low: float
  high: Optional[float] = None
  why: str = ""
  high_why: str = ""


def _count(low, why=""):
  """A count that the loops hold in int32."""
  return Bound(low, INT32_MAX, why, _INT32_WHY)


# The binaries share the original's flag names, so one table holds them all; a binary (or a
# settings class) without the name skips its row. 0 is allowed only where it means "none".
# create_pretraining_data checks its own further (data.pretraining_data.check_settings: it runs
# without this module's binaries' flags, from Beam workers too), --max_predictions_per_seq
# included: run_pretraining's must match its records (data.pipeline.check_record_lengths).
FLAG_BOUNDS = {
    **{name: _count(1) for name in (
        "train_batch_size", "eval_batch_size", "predict_batch_size", "save_checkpoints_steps",
        "iterations_per_loop", "gradient_accumulation_steps", "num_tpu_cores", "max_eval_steps",
        "doc_stride", "max_query_length", "max_qa_length", "n_best_size", "max_answer_length",
        "start_n_top", "end_n_top", "default_seq_length", "calibration_examples")},
    # The SavedModel version names a directory (TF Serving reads it as int64): no int32 cap.
    "version": Bound(1),
    # Fine-tuning packs [CLS] a [SEP] (the classifier's pairs trim to max_seq_length - 3 and
    # fail below 0; NER's windows hold max_seq_length - 2 pieces); create_pretraining_data
    # needs 5 (its own check).
    "max_seq_length": _count(3, " ([CLS], a piece and [SEP])"),
    "train_step": _count(1, " (the number of updates --do_train makes)"),
    "num_train_steps": _count(1, " (the number of updates training makes)"),
    "warmup_step": _count(0, " (0: no warmup)"),
    "num_warmup_steps": _count(0, " (0: no warmup)"),
    "start_warmup_step": _count(0),
    "keep_checkpoint_max": _count(0, " (0: keep every checkpoint)"),
    "cpu_devices": _count(0, " (0 or 1: the CPU as one device)"),
    "num_workers": _count(0, " (0: one process)"),
    "random_seed": Bound(0, SEED_MAX, _SEED_WHY),
    # Its epochs' shuffle seeds are data_seed * 1,000,003 + epoch in int64.
    "data_seed": Bound(0, SEED_MAX, " (2**32 - 1: a 32-bit seed, as --random_seed)"),
    "learning_rate": Bound(0.0),
    "poly_power": Bound(0.0),
    "num_train_epochs": Bound(0.0),
    "warmup_proportion": Bound(0.0, 1.0),
    "masked_lm_budget": Bound(0.0, 1.0, " (0: the records' own masks)"),
    "sentence_order_loss_weight": Bound(0.0, None, " (0: the masked LM alone)"),
    "max_sequences_per_row": _count(1, " (1: one sequence a row, as unpacked)"),
    "dropout_prob": Bound(0.0, 0.999),
    "classifier_dropout": Bound(0.0, 0.999),
    "albert_dropout": Bound(0.0, 0.999),
}


def _rule(bound, above):
  """The rule a value broke: `above` the high bound, or else below the low one (or not
  finite)."""
  if bound.high is not None and bound.high_why:
    # The high bound is the code's limit, not the range's meaning: each side says its own.
    if above:
      return f"must be at most {bound.high}{bound.high_why}"
    return f"must be at least {bound.low}{bound.why}"
  if bound.high is None:
    return f"must be at least {bound.low}{bound.why}"
  return f"must be between {bound.low} and {bound.high}{bound.why}"


def violation(name, value, bound=None):
  """The rule `value` breaks for the flag or setting `name` ("must be at least 1"), or None when
  it keeps it, has no row in FLAG_BOUNDS, or is None (not given) or a bool.

  Args:
    name: the flag or field name.
    value: its value.
    bound: a Bound to check instead of FLAG_BOUNDS[name].
  """
  bound = bound or FLAG_BOUNDS.get(name)
  if bound is None or value is None or isinstance(value, bool):
    return None
  if not isinstance(value, numbers.Real):
    return f"must be a number, not {type(value).__name__}"
  # Integers are finite (and may be too large for float()); NaN compares as within any bound.
  finite = isinstance(value, numbers.Integral) or math.isfinite(value)
  if not finite or value < bound.low:
    return _rule(bound, above=False)
  if bound.high is not None and value > bound.high:
    return _rule(bound, above=True)
  return None


def check_fields(settings, skip=()):
  """Raises errors.UsageError for the first field of the dataclass `settings` out of its
  FLAG_BOUNDS row, naming the field: `train_batch_size=0: must be at least 1`. Nested settings
  are not looked into: each checked its own when it was made.

  Args:
    settings: a dataclass instance.
    skip: field names its class checks itself.

  Raises:
    errors.UsageError: as above.
  """
  for field in dataclasses.fields(settings):
    if field.name in skip:
      continue
    value = getattr(settings, field.name)
    rule = violation(field.name, value)
    if rule is not None:
      shown = repr(value) if isinstance(value, str) else value
      raise errors.UsageError(f"{field.name}={shown}: {rule}")
