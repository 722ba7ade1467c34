"""Reading and writing checkpoints in the released TF1 layout (`bert/...`, `cls/...`)."""

import dataclasses
import json
import logging
import os
import re
from typing import Optional

import keras
import numpy as np
import tensorflow as tf

from albert_tf.core import errors
from albert_tf.core import io
from albert_tf.checkpoints import layout

logger = logging.getLogger("albert_tf")
# What a fine-tuning run keeps of its best evaluation (finetuning.job), beside model.ckpt-<step>.
BEST_CHECKPOINT = "model.ckpt-best"
# The directories already logged as resolving to their model.ckpt-best: a load resolves its path
# several times (the layout test, the head test, the load), and the line is said once.
_BEST_LOGGED = set()


@dataclasses.dataclass
class LoadReport:
  """What a checkpoint load did, for either layout. Model variables go by their original names;
  unused checkpoint weights by their names in the checkpoint (object paths for ours)."""
  path: str
  loaded: list
  missing: list   # model variables the checkpoint lacks (kept at their current values)
  unused: list    # checkpoint weights the model has no variable for (optimizer state excluded)
  from_group0: list = dataclasses.field(default_factory=list)

  def __str__(self):
    text = (f"loaded {len(self.loaded)} variables from {self.path}; "
            f"missing {len(self.missing)}{_listing(self.missing)}; "
            f"unused {len(self.unused)}{_listing(self.unused)}")
    if self.from_group0:
      text += f"; from group 0: {len(self.from_group0)}"
    return text


def _listing(names, limit=10):
  """': a, b (+3 more)' -- a log line stays short even when a whole model is listed."""
  if not names:
    return ""
  more = f" (+{len(names) - limit} more)" if len(names) > limit else ""
  return ": " + ", ".join(names[:limit]) + more


def resolve_checkpoint_path(path):
  """A checkpoint prefix from a prefix or a directory.

  A directory holding model.ckpt-best (a fine-tuning output_dir) resolves to it, not to the
  latest model.ckpt-N its `checkpoint` state file names: the best evaluation is what the run
  reported (eval_results.txt, its predictions) and exported (--export_dir), and what a later
  fine-tuning step left may be worse. Any other directory resolves to its latest checkpoint.
  Training's resume of its own output_dir reads the state file itself (training.checkpointing), not
  this.

  Args:
    path: a checkpoint prefix (`.../model.ckpt-4`), or a directory holding one.

  Raises:
    ValueError: no path.
    FileNotFoundError: no such prefix, or a directory with no checkpoint.
  """
  if path is None or not str(path):
    raise errors.UsageError("no checkpoint path given")
  path = os.fspath(path)
  # The prefix test first: some filesystems (ram://) call any leading part of a file name a
  # directory, so `model.ckpt-best` would look like one.
  if io.exists(path + ".index"):
    return path
  if io.isdir(path):
    best = os.path.join(path, BEST_CHECKPOINT)
    latest = tf.train.latest_checkpoint(path)
    if io.exists(best + ".index"):
      if path not in _BEST_LOGGED and latest != best:
        _BEST_LOGGED.add(path)
        logger.warning(f"{path} holds {BEST_CHECKPOINT}: using it, not the latest "
                       f"{os.path.basename(latest) if latest else 'model.ckpt-N'} (the best "
                       "evaluation is what the run reported and exported)")
      return best
    if latest is None:
      raise FileNotFoundError(
          f"no checkpoint found in directory {path} (expected a `checkpoint` state file naming "
          "one, or pass the checkpoint prefix such as .../model.ckpt-best)")
    return latest
  raise FileNotFoundError(f"checkpoint not found: {path} (no {path}.index)")


def checkpoint_reader(prefix):
  """A tf.train.CheckpointReader of a resolved prefix (see resolve_checkpoint_path).
  tf.train.load_checkpoint would resolve it again with the directory test above, which fails on
  ram:// (it asks for a `checkpoint` file in `<prefix>` as a directory)."""
  return tf.compat.v1.train.NewCheckpointReader(prefix)


# The config keys that decide which transformer variables a model has.
_LAYOUT_KEYS = "parameter_sharing, num_hidden_groups, inner_group_num"


def _group0_name(name):
  return re.sub(r"/group_\d+/", "/group_0/", name)


def load_original_checkpoint(model: keras.Model, path: str, init_from_group0: bool = False,
                             strict_encoder: bool = True, reader=None) -> LoadReport:
  """Loads a released/original TF1 checkpoint into an AlbertModel or AlbertPretrainer.

  Args:
    model: a model with a known original layout (see checkpoints.layout).
    path: a checkpoint prefix (e.g. `.../model.ckpt-best`) or a directory with a `checkpoint` file.
    init_from_group0: as the original's flag, a group_k variable absent from the checkpoint is
      initialised from group_0's.
    strict_encoder: raise when an encoder (`bert/...`) variable is absent from the checkpoint.
    reader: the checkpoint's reader when the caller has it open (`path` is then its prefix).
  Returns:
    a LoadReport. Optimizer slots and global_step are skipped.
  Raises:
    ValueError naming the variable and both shapes on any shape mismatch; KeyError naming the
    absent encoder variables.
  """
  prefix = resolve_checkpoint_path(path)
  reader = reader or checkpoint_reader(prefix)
  shapes = reader.get_variable_to_shape_map()
  targets = layout.original_variable_map(model)
  sources = {name: name for name in targets if name in shapes}
  used = set(sources.values())
  unused = sorted(n for n in shapes if layout.is_model_weight_name(n) and n not in used)
  if strict_encoder:
    check_layers_used([n for n in unused if layout.is_layer_name(n)], prefix)
  loaded, missing, from_group0 = load_variables(targets, sources, reader, prefix,
                                                init_from_group0, strict_encoder)
  return LoadReport(prefix, loaded, missing, unused, from_group0)


def check_layers_used(unused_layers, prefix):
  """Raises when a checkpoint holds transformer layers the model has no place for: it was
  trained with another layer layout (parameter_sharing, num_hidden_groups, inner_group_num), and
  loading the part that fits would silently drop the rest (a not-shared checkpoint would load
  into an all-shared model as its first layer alone).

  Args:
    unused_layers: the checkpoint's names of the unused transformer variables.
    prefix: the checkpoint, for the message.

  Raises:
    KeyError: naming them, before anything is assigned.
  """
  if unused_layers:
    raise errors.MissingKeyError(
        f"checkpoint {prefix} holds {len(unused_layers)} transformer variables the model has no "
        f"place for{_listing(sorted(unused_layers))}. It was trained with another layer layout: "
        f"compare {_LAYOUT_KEYS} of the albert_config with the checkpoint's")


class ShapeMismatchError(errors.CheckpointError):
  """A checkpoint variable whose shape is not the model's (load_variables raises it before
  anything is assigned). A task head of another shape (another label count) is a new head to
  a fine-tuning run that trains (albert_tf.finetuning.job), the name tells it.

  Attributes:
    name: the model variable's original name.
    checkpoint_shape: its shape in the checkpoint, a list.
    model_shape: the model's, a list.
  """

  def __init__(self, name, prefix, checkpoint_shape, model_shape):
    self.name = name
    self.checkpoint_shape, self.model_shape = list(checkpoint_shape), list(model_shape)
    super().__init__(
        f"shape mismatch for {name}: checkpoint {prefix} has {self.checkpoint_shape}, the model "
        f"expects {self.model_shape} (does the albert_config match the config the checkpoint "
        "was trained with?)")


def load_variables(targets, sources, reader, prefix, init_from_group0=False, strict_encoder=True):
  """Assigns checkpoint tensors to model variables; the part both layouts share.

  Args:
    targets: {original name: variable} of the model.
    sources: {original name: checkpoint key} of the targets the checkpoint holds.
    reader: a tf.train.CheckpointReader of `prefix`.
  Returns:
    sorted lists (loaded, missing, from_group0) of original names.
  Raises:
    ValueError naming the variable and both shapes on any shape mismatch; KeyError naming the
    absent encoder variables. Both before anything is assigned, so the model is never half loaded.
  """
  shapes = reader.get_variable_to_shape_map()
  plan, missing, from_group0 = {}, [], []
  for name, variable in targets.items():
    source = sources.get(name)
    if source is None and init_from_group0 and _group0_name(name) in sources:
      source = sources[_group0_name(name)]
      from_group0.append(name)
    if source is None:
      missing.append(name)
      continue
    if tuple(shapes[source]) != tuple(variable.shape):
      raise ShapeMismatchError(name, prefix, shapes[source], variable.shape)
    plan[name] = (source, variable)

  missing_encoder = sorted(n for n in missing if layout.is_encoder_name(n))
  if strict_encoder and missing_encoder:
    raise errors.MissingKeyError(
        f"checkpoint {prefix} lacks {len(missing_encoder)} encoder variables the model has"
        f"{_listing(missing_encoder)}. The albert_config does not match the config the checkpoint "
        f"was trained with: compare {_LAYOUT_KEYS} and embedding_size"
        + _group0_hint(missing_encoder, init_from_group0))

  for name, (source, variable) in plan.items():
    variable.assign(reader.get_tensor(source).astype(variable.dtype))
  return sorted(plan), sorted(missing), sorted(from_group0)


def _group0_hint(missing, init_from_group0):
  if init_from_group0 or not any(_group0_name(n) != n for n in missing):
    return ""
  return " (or, to grow the model on purpose, pass init_from_group0 to copy group_0 into them)"


def save_original_checkpoint(model: keras.Model, prefix: str, global_step: int = 0,
                             extra_tensors: Optional[dict] = None,
                             update_checkpoint_state: bool = True) -> str:
  """Writes the model's weights as a TF1 checkpoint in the released layout.

  Writes `<prefix>.index` and `<prefix>.data-00000-of-00001` (plus `global_step`) through a
  temporary directory, then moves them in place, the index last, so that a crash never leaves a
  readable half-written checkpoint.

  Args:
    model: any albert_tf model; its variables are written under their original names
      (model.original_variables()).
    prefix: the checkpoint prefix (any TF file system).
    global_step: the `global_step` value written with it.
    extra_tensors: {name: array} of more variables to write (e.g. optimizer slots).
    update_checkpoint_state: make the directory's `checkpoint` file name the new checkpoint.

  Returns:
    The prefix.
  """
  prefix = io.abspath(os.fspath(prefix))
  directory, base = io.split(prefix)
  io.makedirs(directory)
  tensors = {name: v.numpy() for name, v in layout.original_variable_map(model).items()}
  if global_step is not None:
    tensors["global_step"] = np.asarray(global_step, dtype=np.int64)
  tensors.update(extra_tensors or {})
  names = sorted(tensors)
  tmp_dir = io.make_temp_dir(directory, ".tmp_ckpt_")
  try:
    tmp_prefix = os.path.join(tmp_dir, base)
    tf.raw_ops.SaveV2(prefix=tmp_prefix, tensor_names=names, shape_and_slices=[""] * len(names),
                      tensors=[tf.convert_to_tensor(tensors[n]) for n in names])
    data_files = [f for f in io.listdir(tmp_dir) if ".data-" in f]
    for f in data_files + [base + ".index"]:
      io.rename(os.path.join(tmp_dir, f), os.path.join(directory, f))
  finally:
    io.rmtree(tmp_dir, ignore_errors=True)
  if update_checkpoint_state:
    write_checkpoint_state(directory, base)
  return prefix


def write_checkpoint_state(directory, base):
  """Writes `<directory>/checkpoint` naming checkpoint `base` alone, as
  tf.compat.v1.train.update_checkpoint_state did (deprecated; it warned on every call).

  Args:
    directory: the checkpoint's directory (any TF file system).
    base: the checkpoint's file name prefix, relative: the directory stays movable, as the
      released tarballs are.
  """
  name = json.dumps(base)  # a text-format string: quotes and backslashes escaped
  io.write_text_atomically(os.path.join(directory, "checkpoint"),
                           f"model_checkpoint_path: {name}\nall_model_checkpoint_paths: {name}\n")
