"""Hugging Face transformers checkpoints (config.json + model.safetensors), both ways.

safetensors comes with the `hf` extra (pip install "albert-tf[hf]") and is imported only where a
safetensors file is read or written, so that every other layout, and `import albert_tf`, work
without it; without it those two say which extra to install.

HF's ALBERT layout is a renaming of the original one: every model names its variables by their
original TF1 names (`original_variables()`), and each name maps to one HF key (hf_names). Which
transformers class a model is written as is hf_heads'; its config.json is hf_config's.
"""

import json
import os
from typing import Optional

import keras
import numpy as np

from albert_tf.core import errors
from albert_tf.core import io
from albert_tf.core.config import AlbertConfig
from albert_tf.checkpoints import companions, hf_config, hf_heads, layout, original
from albert_tf.checkpoints.hf_names import HF_LAYERS, PREFIX, PROJECTION, TIED, hf_key

WEIGHTS_NAME = "model.safetensors"
CONFIG_NAME = hf_config.CONFIG_NAME
SPM_NAME = "spiece.model"
TOKENIZER_CONFIG_NAME = "tokenizer_config.json"
_INDEX_NAME = "model.safetensors.index.json"


def is_hf_checkpoint(path):
  """True for a `*.safetensors` file or a directory holding model.safetensors (or its sharded
  index), as transformers' save_pretrained writes."""
  path = os.fspath(path)
  if path.endswith(".safetensors"):
    return io.exists(path)
  return io.isdir(path) and (io.exists(os.path.join(path, WEIGHTS_NAME))
                             or io.exists(os.path.join(path, _INDEX_NAME)))


def _safetensors(what):
  """The safetensors package (its numpy API imported), or errors.MissingExtraError naming the hf
  extra and `what` needed it."""
  safetensors = errors.require_module("safetensors", "hf", what)
  import safetensors.numpy  # noqa: F811 -- the same package, its numpy API loaded
  return safetensors


def read_safetensors(path):
  """{key: numpy array} of an HF checkpoint (a file, or a directory: one or sharded files).

  Args:
    path: a `*.safetensors` file or a directory as `is_hf_checkpoint` accepts; any TF file system.

  Returns:
    The tensors by their HF keys.

  Raises:
    FileNotFoundError: when `path` holds no safetensors weights.
    ValueError: a file that is not valid safetensors (truncated or corrupt), naming it.
    errors.MissingExtraError: without the hf extra (safetensors).
  """
  path = os.fspath(path)
  if path.endswith(".safetensors"):
    files = [path]
  elif io.exists(os.path.join(path, WEIGHTS_NAME)):
    files = [os.path.join(path, WEIGHTS_NAME)]
  elif io.exists(os.path.join(path, _INDEX_NAME)):
    weight_map = json.loads(io.read_text(os.path.join(path, _INDEX_NAME)))["weight_map"]
    files = [os.path.join(path, f) for f in sorted(set(weight_map.values()))]
  else:
    raise FileNotFoundError(f"no Hugging Face weights at {path}: expected a .safetensors file or "
                            f"a directory with {WEIGHTS_NAME}")
  safetensors = _safetensors(f"reading the Hugging Face checkpoint {path}")
  tensors = {}
  for f in files:
    if not io.exists(f):
      raise FileNotFoundError(f"Hugging Face weights file not found: {f}")
    with io.open_binary(f) as stream:
      data = stream.read()
    try:
      tensors.update(safetensors.numpy.load(data))
    except safetensors.SafetensorError as e:
      raise errors.CheckpointError(
          f"Hugging Face weights file {f} ({len(data)} bytes) cannot be read: {e}. "
          "It looks truncated or corrupt: copy or download it again") from None
  return tensors


class _Reader:
  """HF tensors under original names' HF keys, transposed where the original's are: what
  original.load_variables reads (a CheckpointReader's two methods)."""

  def __init__(self, tensors, transposed):
    self._tensors = tensors
    self._transposed = transposed

  def _value(self, key):
    value = self._tensors[key]
    return value.T if key in self._transposed else value

  def get_variable_to_shape_map(self):
    return {key: list(self._value(key).shape) for key in self._tensors}

  def get_tensor(self, key):
    return np.ascontiguousarray(self._value(key))


def load_hf_checkpoint(model: keras.Model, path: str,
                       init_from_group0: bool = False) -> original.LoadReport:
  """Loads a Hugging Face ALBERT checkpoint (transformers' save_pretrained) into `model`.

  Sources: AlbertModel (keys without `albert.`), AlbertForPreTraining, AlbertForMaskedLM,
  AlbertForSequenceClassification, AlbertForQuestionAnswering and AlbertForTokenClassification
  (no pooler: it is reported missing and stays as initialised), AlbertForMultipleChoice.

  Args:
    model: any albert_tf model (AlbertModel, AlbertPretrainer, AlbertClassifier, ...).
    path: a `*.safetensors` file or a directory holding model.safetensors; any TF file system.
    init_from_group0: initialise layer groups the checkpoint lacks from its group 0.

  Returns:
    A LoadReport: model variables by their original names, unused ones by their HF keys.

  Raises:
    ValueError: a model HF cannot hold (parameter_sharing shared-attention or shared-FFN), a
      variable of another shape (names it and both shapes), or an HF projection
      `embedding_hidden_mapping_in` that the model (embedding_size == hidden_size) has no room
      for and that is not the identity.
    KeyError: encoder variables the checkpoint lacks (the config does not match it).
  """
  path = os.fspath(path)
  hf_config.check_hf_can_hold(model.config)
  tensors = read_safetensors(path)
  prefix = PREFIX if any(k.startswith(PREFIX) for k in tensors) else ""
  targets = layout.original_variable_map(model)
  sources, transposed = {}, set()
  for name in targets:
    key, flip = hf_key(name, prefix)
    if name == "cls/predictions/output_bias" and key not in tensors:
      key = "predictions.decoder.bias"  # older transformers wrote the bias here too
    if key in tensors:
      sources[name] = key
      if flip:
        transposed.add(key)
  used = set(sources.values()) | set(TIED)
  used |= _check_projection(targets, tensors, prefix, path)
  _check_encoder(targets, sources, path, init_from_group0)
  original.check_layers_used([k for k in tensors if HF_LAYERS in k and k not in used], path)
  loaded, missing, from_group0 = original.load_variables(
      targets, sources, _Reader(tensors, transposed), path, init_from_group0,
      strict_encoder=False)
  unused = sorted(k for k in tensors if k not in used)
  return original.LoadReport(path, loaded, missing, unused, from_group0)


def _check_projection(targets, tensors, prefix, path):
  """HF always has embedding_hidden_mapping_in; the original has none when E == H. An identity
  projection with zero bias (what save_hf_checkpoint writes then) changes nothing: the keys are
  taken as used. Returns those keys."""
  weight, bias = prefix + PROJECTION + ".weight", prefix + PROJECTION + ".bias"
  if "bert/encoder/embedding_hidden_mapping_in/kernel" in targets or weight not in tensors:
    return set()
  w, b = tensors[weight], tensors.get(bias)
  identity = (w.ndim == 2 and w.shape[0] == w.shape[1]
              and np.array_equal(w, np.eye(len(w), dtype=w.dtype)))
  if identity and (b is None or not b.any()):
    return {weight, bias}
  raise errors.CheckpointError(
      f"Hugging Face checkpoint {path} has {weight} {list(w.shape)}, a learned projection of "
      "the embeddings (HF always has one), but the model has embedding_size == hidden_size, for "
      "which the original ALBERT (and this model) has no projection. Only an identity projection "
      "with zero bias loads into such a model; this one is not: the checkpoint cannot be "
      "represented in the original architecture")


def _check_encoder(targets, sources, path, init_from_group0):
  """Raises before anything is assigned when encoder variables are absent. The pooler may be:
  transformers' AlbertForQuestionAnswering has none."""
  absent = sorted(
      n for n in targets
      if layout.is_encoder_name(n) and not n.startswith("bert/pooler/") and n not in sources
      and not (init_from_group0 and original._group0_name(n) in sources))
  if absent:
    listing = ", ".join(hf_key(n)[0] for n in absent[:10])
    raise errors.MissingKeyError(
        f"Hugging Face checkpoint {path} lacks {len(absent)} encoder weights the model has "
        f"({listing}{' ...' if len(absent) > 10 else ''}). The albert_config does not match the "
        "checkpoint's config.json: compare num_hidden_groups, inner_group_num and embedding_size "
        "(or build the config with albert_tf.checkpoints.hf_config.from_hf_config)")


def hf_tensors(model):
  """{HF key: float32 array} of the model's weights, as transformers' save_pretrained writes
  them for the matching architecture (the model's hf_heads.HfHead).

  Args:
    model: AlbertModel, AlbertPretrainer, AlbertClassifier, AlbertMultipleChoice or
      AlbertSpanLabeler.

  Raises:
    ValueError: for a model HF cannot hold (parameter_sharing shared-attention or shared-FFN).

  Returns:
    The tensors: for an AlbertModel without the `albert.` prefix; for AlbertSpanLabeler without
    the pooler (transformers' AlbertForQuestionAnswering has none); the tied decoder not written.
  """
  kind = hf_heads.architecture(model)
  hf_config.check_hf_can_hold(model.config)
  prefix = "" if kind == "AlbertModel" else PREFIX
  pooler = hf_heads.for_model(model).pooler
  tensors = {}
  for name, variable in layout.original_variable_map(model).items():
    if not pooler and name.startswith("bert/pooler/"):
      continue
    key, transposed = hf_key(name, prefix)
    value = variable.numpy().astype(np.float32)
    tensors[key] = np.ascontiguousarray(value.T if transposed else value)
  hidden = model.config.hidden_size
  if prefix + PROJECTION + ".weight" not in tensors:
    # E == H: the original has no projection, HF always has one. The identity is exact.
    tensors[prefix + PROJECTION + ".weight"] = np.eye(hidden, dtype=np.float32)
    tensors[prefix + PROJECTION + ".bias"] = np.zeros(hidden, np.float32)
  return tensors


def write_safetensors(tensors, path):
  """Writes `tensors` to a safetensors file atomically, with the metadata transformers checks
  (`format: pt`: it refuses files without a known format)."""
  safetensors = _safetensors("writing a Hugging Face checkpoint")
  data = safetensors.numpy.save(tensors, metadata={"format": "pt"})
  with io.AtomicFile(path) as f:
    f.write(data)


def save_hf_checkpoint(model: keras.Model, directory: str, spm_model_file: Optional[str] = None,
                       do_lower_case: bool = True) -> str:
  """Writes `model` as transformers' save_pretrained does, for `from_pretrained` to load as is.

  Writes config.json, model.safetensors (float32) and, given a SentencePiece model,
  spiece.model and tokenizer_config.json (transformers' AlbertTokenizer). Each file is written
  atomically.

  Args:
    model: AlbertModel, AlbertPretrainer, AlbertClassifier, AlbertMultipleChoice,
      AlbertSpanLabeler or a task's model: any with an architecture in hf_heads.
    directory: the directory to write (created if missing); any TF file system.
    spm_model_file: the SentencePiece model the checkpoint was trained with, or None.
    do_lower_case: whether the tokenizer lower-cases text (the released models do).

  Returns:
    The directory.

  Raises:
    TypeError: for a model without an HF counterpart.
    ValueError: for a model HF cannot hold (parameter_sharing shared-attention or shared-FFN).
  """
  directory = os.fspath(directory)
  kind = hf_heads.architecture(model)
  tensors = hf_tensors(model)
  io.makedirs(directory)
  config = hf_config.to_hf_config(model.config, architecture=kind,
                                  num_labels=getattr(model, "num_labels", None))
  # The head's own fields (its label names, problem_type; None drops one).
  for field, value in hf_heads.config_fields(model).items():
    if value is None:
      config.pop(field, None)
    else:
      config[field] = value
  write_safetensors(tensors, os.path.join(directory, WEIGHTS_NAME))
  if spm_model_file:
    io.copy(spm_model_file, os.path.join(directory, SPM_NAME))
    io.write_text_atomically(os.path.join(directory, TOKENIZER_CONFIG_NAME),
                             json.dumps(hf_config.tokenizer_config(model.config, do_lower_case),
                                        indent=2, sort_keys=True) + "\n")
  # config.json last: from_pretrained looks for it first, so a directory with it is complete.
  io.write_text_atomically(os.path.join(directory, CONFIG_NAME),
                           json.dumps(config, indent=2, sort_keys=True) + "\n")
  return directory


def companion_file(checkpoint, name):
  """`<checkpoint>/<name>` when `checkpoint` is an HF directory holding that file (config.json,
  spiece.model), else None: what the binaries take when --albert_config_file or
  --spm_model_file is not given."""
  if not checkpoint or not io.isdir(os.fspath(checkpoint)) or not is_hf_checkpoint(checkpoint):
    return None
  path = os.path.join(os.fspath(checkpoint), name)
  return path if io.exists(path) else None


def model_config(albert_config_file, init_checkpoint):
  """The model config of a binary: `albert_config_file` when given, else the config.json of
  `init_checkpoint` when that is an HF directory, else the albert_config.json beside it (in a
  run's output_dir given as the checkpoint, or beside a prefix such as .../model.ckpt-best: see
  checkpoints.companions).

  Args:
    albert_config_file: an albert_config.json, or None.
    init_checkpoint: the checkpoint the model starts from, or None.

  Returns:
    (AlbertConfig, the file it was read from).

  Raises:
    ValueError: when neither gives a config (saying which flag to set); when both are there and
      disagree on a field they share (see hf_config.check_configs_agree), or with the
      albert_config.json beside the checkpoint on its architecture
      (companions.check_config_beside).
  """
  hf_file = companion_file(init_checkpoint, CONFIG_NAME)
  if albert_config_file:
    config = AlbertConfig.from_json_file(albert_config_file)
    if hf_file:
      hf_config.check_configs_agree(config, albert_config_file, hf_file)
    else:
      companions.check_config_beside(config, albert_config_file, init_checkpoint)
    return config, albert_config_file
  if hf_file:
    return hf_config.from_hf_config(hf_file), hf_file
  kept = companions.beside(init_checkpoint, companions.CONFIG_NAME)
  if kept:
    return AlbertConfig.from_json_file(kept), kept
  raise errors.UsageError(
      "no model config: give --albert_config_file, or an --init_checkpoint with its config: a "
      f"run's output_dir or a checkpoint with {companions.CONFIG_NAME} beside it, a Hugging "
      "Face directory with config.json, or a keras-hub preset")
