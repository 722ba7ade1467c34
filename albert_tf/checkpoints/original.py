"""Reading and writing checkpoints in the released TF1 layout (`bert/...`, `cls/...`)."""

import dataclasses
import os
import re
import shutil
import tempfile

import numpy as np
import tensorflow as tf

from albert_tf.checkpoints import layout


@dataclasses.dataclass
class LoadReport:
  """What load_original_checkpoint did: names in the original layout."""
  path: str
  loaded: list
  missing: list   # model variables the checkpoint lacks (kept at their current values)
  unused: list    # checkpoint weights the model has no variable for (slots excluded)
  from_group0: list = dataclasses.field(default_factory=list)

  def __str__(self):
    return (f"loaded {len(self.loaded)} variables from {self.path}; "
            f"missing {len(self.missing)}: {self.missing}; unused {len(self.unused)}: "
            f"{self.unused}" + (f"; from group 0: {len(self.from_group0)}"
                                if self.from_group0 else ""))


def resolve_checkpoint_path(path):
  """A checkpoint prefix from a prefix or a directory holding a `checkpoint` state file."""
  if path is None or not str(path):
    raise ValueError("no checkpoint path given")
  path = os.fspath(path)
  if os.path.isdir(path):
    latest = tf.train.latest_checkpoint(path)
    if latest is None:
      raise FileNotFoundError(
          f"no checkpoint found in directory {path} (expected a `checkpoint` state file naming "
          "one, or pass the checkpoint prefix such as .../model.ckpt-best)")
    return latest
  if not tf.io.gfile.exists(path + ".index"):
    raise FileNotFoundError(f"checkpoint not found: {path} (no {path}.index)")
  return path


def _group0_name(name):
  return re.sub(r"/group_\d+/", "/group_0/", name)


def load_original_checkpoint(model, path, init_from_group0=False, strict_encoder=True):
  """Loads a released/original TF1 checkpoint into an AlbertModel or AlbertPretrainer.

  Args:
    model: a model with a known original layout (see checkpoints.layout).
    path: a checkpoint prefix (e.g. `.../model.ckpt-best`) or a directory with a `checkpoint` file.
    init_from_group0: as the original's flag, a group_k variable absent from the checkpoint is
      initialised from group_0's.
    strict_encoder: raise when an encoder (`bert/...`) variable is absent from the checkpoint.
  Returns:
    a LoadReport. Optimizer slots and global_step are skipped.
  Raises:
    ValueError naming the variable and both shapes on any shape mismatch; KeyError naming the
    absent encoder variables.
  """
  prefix = resolve_checkpoint_path(path)
  reader = tf.train.load_checkpoint(prefix)
  shapes = reader.get_variable_to_shape_map()
  targets = layout.original_variable_map(model)

  plan, missing, from_group0 = {}, [], []
  for name, variable in targets.items():
    source = name
    if source not in shapes and init_from_group0 and _group0_name(name) in shapes:
      source = _group0_name(name)
      from_group0.append(name)
    if source not in shapes:
      missing.append(name)
      continue
    if tuple(shapes[source]) != tuple(variable.shape):
      raise ValueError(
          f"shape mismatch for {name}: checkpoint {prefix} has {list(shapes[source])}, the model "
          f"expects {list(variable.shape)} (does the config match the checkpoint?)")
    plan[name] = (source, variable)

  missing_encoder = [n for n in missing if layout.is_encoder_name(n)]
  if strict_encoder and missing_encoder:
    raise KeyError(
        f"checkpoint {prefix} lacks encoder variables {missing_encoder} (does the config match "
        "the checkpoint, e.g. num_hidden_groups, inner_group_num or embedding_size?)")

  for name, (source, variable) in plan.items():
    variable.assign(reader.get_tensor(source).astype(variable.dtype))
  used = {source for source, _ in plan.values()}
  unused = sorted(n for n in shapes if layout.is_model_weight_name(n) and n not in used)
  return LoadReport(prefix, sorted(plan), sorted(missing), unused, sorted(from_group0))


def save_original_checkpoint(model, prefix, global_step=0, extra_tensors=None,
                             update_checkpoint_state=True):
  """Writes the model's weights as a TF1 checkpoint in the released layout.

  Writes `<prefix>.index` and `<prefix>.data-00000-of-00001` (plus `global_step`) through a
  temporary directory, then moves them in place, the index last, so that a crash never leaves a
  readable half-written checkpoint. With update_checkpoint_state, the directory's `checkpoint`
  file names the new checkpoint. `extra_tensors` ({name: array}) adds more variables (e.g.
  optimizer slots). Returns the prefix.
  """
  prefix = os.path.abspath(os.fspath(prefix))
  directory = os.path.dirname(prefix)
  os.makedirs(directory, exist_ok=True)
  tensors = {name: v.numpy() for name, v in layout.original_variable_map(model).items()}
  if global_step is not None:
    tensors["global_step"] = np.asarray(global_step, dtype=np.int64)
  tensors.update(extra_tensors or {})
  names = sorted(tensors)
  tmp_dir = tempfile.mkdtemp(prefix=".tmp_ckpt_", dir=directory)
  try:
    tmp_prefix = os.path.join(tmp_dir, os.path.basename(prefix))
    tf.raw_ops.SaveV2(prefix=tmp_prefix, tensor_names=names, shape_and_slices=[""] * len(names),
                      tensors=[tf.convert_to_tensor(tensors[n]) for n in names])
    data_files = sorted(f for f in os.listdir(tmp_dir) if ".data-" in f)
    for f in data_files + [os.path.basename(prefix) + ".index"]:
      os.replace(os.path.join(tmp_dir, f), os.path.join(directory, f))
  finally:
    shutil.rmtree(tmp_dir, ignore_errors=True)
  if update_checkpoint_state:
    # A relative path keeps the directory movable, as the released tarballs are.
    tf.compat.v1.train.update_checkpoint_state(directory, os.path.basename(prefix))
  return prefix
