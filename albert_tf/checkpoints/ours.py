"""Our own (object-based, tf.train.Checkpoint) checkpoints, and loading either layout."""

import tensorflow as tf

from albert_tf.checkpoints import original
from albert_tf.checkpoints.layout import model_parts


def is_original_layout(prefix):
  """True for a TF1 name-based checkpoint (bert/..., cls/...), False for ours."""
  names = [n for n, _ in tf.train.list_variables(prefix)]
  if "_CHECKPOINTABLE_OBJECT_GRAPH" in names:
    return False
  return any(n.startswith("bert/") for n in names)


def checkpoint_global_step(path):
  """The global step stored in a checkpoint of either layout (0 when it holds none)."""
  reader = tf.train.load_checkpoint(original.resolve_checkpoint_path(path))
  for name in ("global_step", "global_step/.ATTRIBUTES/VARIABLE_VALUE"):
    if reader.has_tensor(name):
      return int(reader.get_tensor(name))
  return 0


def load_checkpoint(model, path, init_from_group0=False):
  """Loads weights from a released/original TF1 checkpoint or one of ours into `model`.

  `path` is a prefix or a directory (its latest checkpoint). The layout is detected. Only model
  weights are read (no optimizer state). Returns a LoadReport for the original layout, or the
  tf.train.Checkpoint load status for ours.
  """
  prefix = original.resolve_checkpoint_path(path)
  if is_original_layout(prefix):
    return original.load_original_checkpoint(model, prefix, init_from_group0=init_from_group0)
  available = {n.split("/")[0] for n, _ in tf.train.list_variables(prefix)}
  parts = model_parts(model)
  missing = [name for name in parts if name not in available]
  if "encoder" in missing:
    raise KeyError(f"checkpoint {prefix} holds no encoder weights (found {sorted(available)})")
  status = tf.train.Checkpoint(**{k: v for k, v in parts.items() if k not in missing}).read(prefix)
  status.expect_partial()
  return status
