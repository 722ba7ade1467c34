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

A task's own flags (SQuAD's --doc_stride, the classifier's --classifier_dropout) are bound in
its folder: its settings module's FLAG_BOUNDS, which its settings class checks as FIELD_BOUNDS
(check_fields) and its binary adds to what cli checks (register) when it defines the flags.

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


def count(low, why=""):
  """A count that the loops hold in int32: at least `low`, at most INT32_MAX."""
  return Bound(low, INT32_MAX, why, _INT32_WHY)


# A dropout probability: 1 would drop everything.
DROPOUT = Bound(0.0, 0.999)

# The flags the binaries share (the original's names), one table for them all; a binary (or a
# settings class) without the name skips its row. 0 is allowed only where it means "none".
# A task's own flags are its folder's (register).
# create_pretraining_data checks its own further (data.pretraining_data.check_settings: it runs
# without this module's binaries' flags, from Beam workers too), --max_predictions_per_seq
# included: run_pretraining's must match its records (data.pipeline.check_record_lengths).
FLAG_BOUNDS = {
    **{name: count(1) for name in (
        "train_batch_size", "eval_batch_size", "predict_batch_size", "save_checkpoints_steps",
        "iterations_per_loop", "gradient_accumulation_steps", "num_tpu_cores", "max_eval_steps",
        "default_seq_length", "calibration_examples")},
    # The SavedModel version names a directory (TF Serving reads it as int64): no int32 cap.
    "version": Bound(1),
    # Fine-tuning packs [CLS] a [SEP] (the classifier's pairs trim to max_seq_length - 3 and
    # fail below 0; NER's windows hold max_seq_length - 2 pieces); create_pretraining_data
    # needs 5 (its own check).
    "max_seq_length": count(3, " ([CLS], a piece and [SEP])"),
    "train_step": count(1, " (the number of updates --do_train makes)"),
    "num_train_steps": count(1, " (the number of updates training makes)"),
    "warmup_step": count(0, " (0: no warmup)"),
    "num_warmup_steps": count(0, " (0: no warmup)"),
    "start_warmup_step": count(0),
    "keep_checkpoint_max": count(0, " (0: keep every checkpoint)"),
    "cpu_devices": count(0, " (0 or 1: the CPU as one device)"),
    "num_workers": count(0, " (0: one process)"),
    "random_seed": Bound(0, SEED_MAX, _SEED_WHY),
    # Its epochs' shuffle seeds are data_seed * 1,000,003 + epoch in int64.
    "data_seed": Bound(0, SEED_MAX, " (2**32 - 1: a 32-bit seed, as --random_seed)"),
    "learning_rate": Bound(0.0),
    "poly_power": Bound(0.0),
    "num_train_epochs": Bound(0.0),
    "warmup_proportion": Bound(0.0, 1.0),
    "masked_lm_budget": Bound(0.0, 1.0, " (0: the records' own masks)"),
    "sentence_order_loss_weight": Bound(0.0, None, " (0: the masked LM alone)"),
    "max_sequences_per_row": count(1, " (1: one sequence a row, as unpacked)"),
    # The encoder's dropout in fine-tuning: every fine-tuning binary's flag.
    "albert_dropout": DROPOUT,
}

# The tasks' own bounds that their binaries added (register): {name: Bound}.
_REGISTERED = {}


def register(table):
  """Adds a task's bounds ({flag name: Bound}, its settings module's FLAG_BOUNDS) to those cli
  checks once the flags parse (flag_bounds()). The task's define_flags() calls it.

  Args:
    table: {flag name: Bound}.

  Raises:
    ValueError: a name already bound otherwise (FLAG_BOUNDS, or another registered table).
  """
  for name, bound in table.items():
    known = FLAG_BOUNDS.get(name, _REGISTERED.get(name))
    if known is not None and known != bound:
      raise ValueError(f"bounds.register: --{name} is bound already as {known}, not {bound}: "
                       "give the flag another name, or the same bound")
  _REGISTERED.update(table)


def flag_bounds():
  """{flag name: Bound} that cli checks: FLAG_BOUNDS and the registered tasks' bounds."""
  return {**FLAG_BOUNDS, **_REGISTERED}


def field_bounds(settings_class):
  """{field name: Bound} that a settings class's fields keep: FLAG_BOUNDS, then the FIELD_BOUNDS
  of each class in its bases (a subclass's over its parents').

  Args:
    settings_class: a settings dataclass.
  """
  table = dict(FLAG_BOUNDS)
  for klass in reversed(settings_class.__mro__):
    table.update(vars(klass).get("FIELD_BOUNDS", {}))
  return table


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
  it keeps it, has no row in FLAG_BOUNDS (nor `bound`), or is None (not given) or a bool.

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
  """Raises errors.UsageError for the first field of the dataclass `settings` out of its bound
  (field_bounds: FLAG_BOUNDS and its class's FIELD_BOUNDS), naming the field:
  `train_batch_size=0: must be at least 1`. Nested settings are not looked into: each checked
  its own when it was made.

  Args:
    settings: a dataclass instance.
    skip: field names its class checks itself.

  Raises:
    errors.UsageError: as above.
  """
  table = field_bounds(type(settings))
  for field in dataclasses.fields(settings):
    if field.name in skip or field.name not in table:
      continue
    value = getattr(settings, field.name)
    rule = violation(field.name, value, table[field.name])
    if rule is not None:
      shown = repr(value) if isinstance(value, str) else value
      raise errors.UsageError(f"{field.name}={shown}: {rule}")
