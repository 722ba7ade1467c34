"""keras-hub presets (`save_to_preset`'s directories) as checkpoints: read, never written.

A keras-hub ALBERT preset is a directory with config.json (the AlbertBackbone's Keras config,
`registered_name: keras_hub>AlbertBackbone`), model.weights.h5 (the backbone's weights),
assets/tokenizer/vocabulary.spm (AlbertTokenizer's SentencePiece model) and, for a task preset
(AlbertTextClassifier, AlbertMaskedLM), task.json and task.weights.h5 with the head too. The
preset carries the config and the SentencePiece model, so a binary given one as
--init_checkpoint needs neither --albert_config_file nor --spm_model_file (formats.model_config
and formats.spm_model_file take them from it).

keras-hub's AlbertBackbone is the original's all-shared architecture with one `dropout` for
both dropouts, the tanh GELU (our "gelu") and layer norm epsilon 1e-12; it always has the
embedding projection, which the original has only when embedding_size != hidden_size.

Keras' .weights.h5 groups a layer's variables under `<layer path>/vars/<index>` and stores the
layer's own name in that group's `name` attribute; the layer paths are auto-generated
(`dense_1`), the names are what keras-hub chose (`pooled_dense`), so weights go by their names:
`pooled_dense/0`, `group_0_inner_layer_0/self_attention_layer/query/0` (their original names:
keras_hub_names).
"""

import io as _pyio
import json
import os

import numpy as np

from albert_tf.core import errors
from albert_tf.core import io
from albert_tf.core.config import AlbertConfig
from albert_tf.checkpoints import layout, original
from albert_tf.checkpoints.keras_hub_names import PROJECTION, original_name, original_value

CONFIG_NAME = "config.json"
WEIGHTS_NAME = "model.weights.h5"
TASK_WEIGHTS_NAME = "task.weights.h5"
METADATA_NAME = "metadata.json"  # keras and keras-hub versions, written by save_to_preset
SPM_PATH = os.path.join("assets", "tokenizer", "vocabulary.spm")
BACKBONE = "keras_hub>AlbertBackbone"
_KERAS_HUB = "keras_hub>"

def _read_json(path):
  try:
    return json.loads(io.read_text(path))
  except ValueError as e:
    raise errors.ConfigError(f"{path} is not valid JSON: {e}") from None


def _registered_name(values):
  return str(values.get("registered_name") or "") if isinstance(values, dict) else ""


def preset_problem(path):
  """Why directory `path`, a keras-hub preset by its files (model.weights.h5 or metadata.json,
  which keras-hub's save_to_preset writes, or a config.json naming a keras_hub> class), cannot
  be read as one: config.json or model.weights.h5 missing, or config.json not valid JSON.
  None for an intact preset, and for anything that is no keras-hub preset at all. A Hugging
  Face directory is not asked: its config.json is transformers' (opened.open_checkpoint tells it
  apart first)."""
  if not path or not io.isdir(os.fspath(path)):
    return None
  path = os.fspath(path)
  config_file, weights = os.path.join(path, CONFIG_NAME), os.path.join(path, WEIGHTS_NAME)
  values, error = None, None
  if io.exists(config_file):
    try:
      values = json.loads(io.read_text(config_file))
    except ValueError as e:
      error = e
  marked = io.exists(weights) or io.exists(os.path.join(path, METADATA_NAME))
  if not (marked or _registered_name(values).startswith(_KERAS_HUB)):
    return None
  again = "save the preset again (save_to_preset) or copy it whole"
  if not io.exists(config_file):
    return f"keras-hub preset {path} has no {CONFIG_NAME} (its model config): {again}"
  if error is not None:
    return (f"{config_file}, the model config of keras-hub preset {path}, is not valid JSON "
            f"({error}): it looks truncated or corrupt; {again}")
  if not io.exists(weights):
    return (f"keras-hub preset {path} has no {WEIGHTS_NAME} (the backbone's weights): {again}")
  return None


def _preset_config(path):
  """The parsed config.json of a keras-hub preset directory, or None for anything else."""
  if not path or not io.isdir(os.fspath(path)):
    return None
  config_file = os.path.join(os.fspath(path), CONFIG_NAME)
  if not io.exists(config_file) or not io.exists(os.path.join(os.fspath(path), WEIGHTS_NAME)):
    return None
  try:
    values = json.loads(io.read_text(config_file))
  except ValueError:
    return None
  return values if _registered_name(values).startswith(_KERAS_HUB) else None


# keras-hub's task classes -> the transformers class holding the same head's weights.
_TASK_ARCHITECTURES = {_KERAS_HUB + "AlbertTextClassifier": "AlbertForSequenceClassification",
                       _KERAS_HUB + "AlbertMaskedLM": "AlbertForMaskedLM"}


def hf_architecture(path):
  """The transformers class whose head preset `path`'s task.json names (a task preset), or
  None for a backbone preset or a task without an ALBERT counterpart there: what tells a
  classifier's [L, H] head from a tagger's, which the weights cannot."""
  task_file = os.path.join(os.fspath(path), "task.json")
  if not io.exists(task_file):
    return None
  values = _read_json(task_file)
  return _TASK_ARCHITECTURES.get(values.get("registered_name") if isinstance(values, dict)
                                 else None)


def is_keras_hub_preset(path):
  """True for a directory keras-hub's save_to_preset wrote: config.json with a `keras_hub>`
  registered_name, and model.weights.h5 (any TF file system)."""
  return _preset_config(path) is not None


def _albert_values(path):
  """The AlbertBackbone config of preset `path` (its config.json's `config`).

  Raises:
    errors.CheckpointError: a keras-hub preset of another model (names its class).
  """
  values = _preset_config(path)
  if values is None:
    raise errors.CheckpointError(
        f"{path} is not a keras-hub preset (a directory with {CONFIG_NAME} naming a keras_hub> "
        f"class and {WEIGHTS_NAME})")
  if values["registered_name"] != BACKBONE:
    raise errors.CheckpointError(
        f"{os.path.join(os.fspath(path), CONFIG_NAME)} is a keras-hub "
        f"{values['registered_name']} preset, not ALBERT ({BACKBONE}): only ALBERT presets "
        "load into this model")
  return values.get("config", {})


def albert_config(path):
  """The AlbertConfig of keras-hub ALBERT preset `path`.

  keras-hub's one `dropout` is both of the original's dropouts; its activation is always the
  tanh GELU (our "gelu"); its kernels are initialised with stddev 0.02.

  Args:
    path: the preset directory.

  Returns:
    The validated AlbertConfig (all-shared parameter sharing, the only one keras-hub has).

  Raises:
    errors.CheckpointError: not an ALBERT preset.
    errors.ConfigError: a config.json lacking one of AlbertBackbone's fields (names it).
  """
  values = _albert_values(path)
  ours = {"vocab_size": "vocabulary_size", "embedding_size": "embedding_dim",
          "hidden_size": "hidden_dim", "num_hidden_layers": "num_layers",
          "num_hidden_groups": "num_groups", "num_attention_heads": "num_heads",
          "intermediate_size": "intermediate_dim", "inner_group_num": "num_inner_repetitions",
          "hidden_dropout_prob": "dropout", "attention_probs_dropout_prob": "dropout",
          "max_position_embeddings": "max_sequence_length", "type_vocab_size": "num_segments"}
  absent = sorted({theirs for theirs in ours.values() if theirs not in values})
  if absent:
    raise errors.ConfigError(
        f"{os.path.join(os.fspath(path), CONFIG_NAME)} lacks AlbertBackbone's "
        f"{', '.join(absent)}: it is not a complete keras-hub ALBERT preset config")
  return AlbertConfig(hidden_act="gelu", initializer_range=0.02,
                      **{field: values[theirs] for field, theirs in ours.items()})


def preset_spm_model(path):
  """The SentencePiece model of keras-hub preset `path` (assets/tokenizer/vocabulary.spm), or
  None when the preset has no tokenizer assets."""
  spm = os.path.join(os.fspath(path), SPM_PATH)
  return spm if io.exists(spm) else None


# -- weights ----------------------------------------------------------------------------------
def read_weights(h5_file):
  """{weight name: numpy array} of a Keras 3 .weights.h5 file, named by the layers' names.

  Args:
    h5_file: model.weights.h5 or task.weights.h5; any TF file system.

  Returns:
    Each variable of each layer under the top-level `layers/` group (nested layers included)
    as `<layer name>/.../<layer name>/<index>`; the optimizer's and the preprocessor's left out.

  Raises:
    errors.CheckpointError: a file h5py cannot read (truncated or not HDF5), naming it.
  """
  # h5py is one of Keras 3's own requirements (its .weights.h5 files need it).
  import h5py
  with io.open_binary(h5_file) as stream:
    data = stream.read()
  tensors = {}

  def visit(group, names):
    variables = group.get("vars")
    if isinstance(variables, h5py.Group) and "name" in variables.attrs:
      names = names + [str(variables.attrs["name"])]
      for index, dataset in variables.items():
        if isinstance(dataset, h5py.Dataset):
          tensors["/".join(names + [index])] = np.asarray(dataset[()])
    for key, child in group.items():
      if key != "vars" and isinstance(child, h5py.Group):
        visit(child, names)

  try:
    with h5py.File(_pyio.BytesIO(data), "r") as f:
      layers = f.get("layers")
      if isinstance(layers, h5py.Group):
        for child in layers.values():
          if isinstance(child, h5py.Group):
            visit(child, [])
  except OSError as e:
    raise errors.CheckpointError(
        f"keras-hub weights file {h5_file} ({len(data)} bytes) cannot be read: {e}. It looks "
        "truncated or corrupt: copy or save the preset again") from None
  return tensors


def preset_tensors(path):
  """The weights of keras-hub ALBERT preset `path` under their original names.

  Args:
    path: the preset directory; its task.weights.h5 (a task preset's head) is read too.

  Returns:
    ({original name: float32 array in the original's shape}, [keras-hub weight names with no
    original counterpart, prefixed by their file]).
  """
  path = os.fspath(path)
  _albert_values(path)
  files = [WEIGHTS_NAME]
  if io.exists(os.path.join(path, TASK_WEIGHTS_NAME)):
    files.append(TASK_WEIGHTS_NAME)
  tensors, unmapped = {}, []
  for file_name in files:
    weights = read_weights(os.path.join(path, file_name))
    for key, value in weights.items():
      # task.weights.h5 holds the backbone again (under its layer name): model.weights.h5's
      # copy is the one read.
      if file_name == TASK_WEIGHTS_NAME and not (key.startswith(("logits/", "mlm_head/"))):
        continue
      name, how = original_name(key)
      if name is None:
        unmapped.append(f"{file_name}:{key}")
        continue
      tensors[name] = original_value(value, how)
  return tensors, unmapped


class _Reader:
  """Arrays by original name: what original.load_variables reads (a CheckpointReader's two
  methods)."""

  def __init__(self, tensors):
    self._tensors = tensors

  def get_variable_to_shape_map(self):
    return {name: list(value.shape) for name, value in self._tensors.items()}

  def get_tensor(self, name):
    return self._tensors[name]


def load_keras_hub_preset(model, path, init_from_group0=False):
  """Loads keras-hub ALBERT preset `path` (backbone, and a task preset's head) into `model`.

  Args:
    model: any albert_tf model; build it from albert_config(path) (formats.model_config does).
    path: the preset directory; any TF file system.
    init_from_group0: initialise layer groups the preset lacks from its group 0.

  Returns:
    A LoadReport: model variables by their original names; unused preset weights by
    `<file>:<keras-hub name>` (a head the model has not, a projection keras-hub always has).

  Raises:
    errors.CheckpointError: not an ALBERT preset; a weight of another shape (names it and both
      shapes); a learned embedding projection that a model with embedding_size == hidden_size
      has no room for.
    errors.MissingKeyError: encoder weights the preset lacks, or transformer layers the model
      has no place for (the config does not match the preset's).
  """
  path = os.fspath(path)
  tensors, unmapped = preset_tensors(path)
  targets = layout.original_variable_map(model)
  sources = {name: name for name in targets if name in tensors}
  used = set(sources) | _identity_projection(targets, tensors, path)
  original.check_layers_used(
      [n for n in tensors if layout.is_layer_name(n) and n not in used], path)
  loaded, missing, from_group0 = original.load_variables(
      targets, sources, _Reader(tensors), path, init_from_group0)
  unused = sorted(unmapped + [n for n in tensors if n not in used])
  return original.LoadReport(path, loaded, missing, unused, from_group0)


def _identity_projection(targets, tensors, path):
  """keras-hub always has the embedding projection; the original has none when E == H. An
  identity kernel with zero bias changes nothing and is taken as used; a learned one cannot be
  represented. Returns the names taken as used."""
  kernel, bias = PROJECTION
  if kernel in targets or kernel not in tensors:
    return set()
  w, b = tensors[kernel], tensors.get(bias)
  if w.shape[0] == w.shape[1] and np.array_equal(w, np.eye(len(w), dtype=w.dtype)) and (
      b is None or not b.any()):
    return {kernel, bias}
  raise errors.CheckpointError(
      f"keras-hub preset {path} has a learned embedding projection {list(w.shape)} (keras-hub "
      "always has one), but embedding_size == hidden_size, for which the original ALBERT has "
      "no projection: this preset cannot be represented in the original architecture")
