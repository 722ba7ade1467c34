"""The optimizers a run can choose, as one table: what `--optimizer` offers, the class
create_optimizer builds, the slot names its variables leave in a checkpoint and how many
float32 copies of the weights they are in the memory estimate all come from an entry here. A new
optimizer is its class (albert_tf.optimization) and one entry.

Plain data, no TensorFlow: the flags are defined from it before TensorFlow loads, and the
checkpoint readers below albert_tf.optimization read its slot names.
"""

import dataclasses

from albert_tf.core import errors


@dataclasses.dataclass(frozen=True)
class OptimizerEntry:
  """One optimizer.

  Args:
    class_path: `module.Class` of its implementation (albert_tf.optimization), built with
      `weight_decay_rate=`.
    slots: the names of its per-variable state, as the original's checkpoints suffix them
      (`<variable>/<slot>`); each is one float32 copy of the weights.
    description: what it is, for the docs.
  """
  class_path: str
  slots: tuple
  description: str


OPTIMIZERS = {
    "adamw": OptimizerEntry(
        "albert_tf.optimization.optimizers.AdamWeightDecay", ("adam_m", "adam_v"),
        "Adam with decoupled weight decay, no bias correction (the original's "
        "AdamWeightDecayOptimizer)"),
    "lamb": OptimizerEntry(
        "albert_tf.optimization.optimizers.Lamb", ("adam_m", "adam_v"),
        "AdamW's update scaled per variable by the trust ratio ||w|| / ||update|| (the "
        "original's LAMBOptimizer)"),
}

# Slots other TF1 optimizers leave in checkpoints users convert (the released ones hold none):
# never model weights either.
OTHER_TF1_SLOTS = ("Adam", "Adam_1", "Momentum", "lamb_m", "lamb_v")


def names():
  """The optimizer names `--optimizer` accepts, sorted."""
  return sorted(OPTIMIZERS)


def entry(name):
  """The OptimizerEntry of `name`.

  Raises:
    errors.UsageError: an optimizer the table does not have, naming those it has.
  """
  if name not in OPTIMIZERS:
    raise errors.UsageError(f"Not supported optimizer: {name!r} (choose "
                            f"{' or '.join(sorted(OPTIMIZERS, reverse=True))})")
  return OPTIMIZERS[name]


def slot_suffixes():
  """`/<slot>` of every slot of the table's optimizers and of OTHER_TF1_SLOTS: the endings of
  checkpoint names that are optimizer state, not weights."""
  slots = {s for e in OPTIMIZERS.values() for s in e.slots} | set(OTHER_TF1_SLOTS)
  return tuple(f"/{s}" for s in sorted(slots))
