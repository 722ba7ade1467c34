"""keras-hub presets (`save_to_preset`'s directories) as checkpoints: read, never written.

A keras-hub ALBERT preset is a directory with config.json (the AlbertBackbone's Keras config,
`registered_name: keras_hub>AlbertBackbone`), model.weights.h5 (the backbone's weights),
assets/tokenizer/vocabulary.spm (AlbertTokenizer's SentencePiece model) and, for a task preset
(AlbertTextClassifier, AlbertMaskedLM), task.json and task.weights.h5 with the head too. The
preset carries the config and the SentencePiece model, so a binary given one as
--init_checkpoint needs neither --albert_config_file nor --spm_model_file (model_config and
spm_model_file below).

keras-hub's AlbertBackbone is the original's all-shared architecture with one `dropout` for
both dropouts, the tanh GELU (our "gelu") and layer norm epsilon 1e-12; it always has the
embedding projection, which the original has only when embedding_size != hidden_size.

Keras' .weights.h5 groups a layer's variables under `<layer path>/vars/<index>` and stores the
layer's own name in that group's `name` attribute; the layer paths are auto-generated
(`dense_1`), the names are what keras-hub chose (`pooled_dense`), so weights go by their names:
`pooled_dense/0`, `group_0_inner_layer_0/self_attention_layer/query/0`.
"""

import io as _pyio
import json
import os
import re

import numpy as np

from albert_tf.core import errors
from albert_tf.core import io

CONFIG_NAME = "config.json"
WEIGHTS_NAME = "model.weights.h5"
TASK_WEIGHTS_NAME = "task.weights.h5"
METADATA_NAME = "metadata.json"  # keras and keras-hub versions, written by save_to_preset
SPM_PATH = os.path.join("assets", "tokenizer", "vocabulary.spm")
BACKBONE = "keras_hub>AlbertBackbone"
_KERAS_HUB = "keras_hub>"

# keras-hub weight name -> original name (backbone: model.weights.h5; heads: task.weights.h5).
_FIXED = {
    "token_embedding/0": "bert/embeddings/word_embeddings",
    "position_embedding/0": "bert/embeddings/position_embeddings",
    "segment_embedding/0": "bert/embeddings/token_type_embeddings",
    "embeddings_layer_norm/0": "bert/embeddings/LayerNorm/gamma",
    "embeddings_layer_norm/1": "bert/embeddings/LayerNorm/beta",
    "embedding_projection/0": "bert/encoder/embedding_hidden_mapping_in/kernel",
    "embedding_projection/1": "bert/encoder/embedding_hidden_mapping_in/bias",
    "pooled_dense/0": "bert/pooler/dense/kernel",
    "pooled_dense/1": "bert/pooler/dense/bias",
    # AlbertTextClassifier: Dense(num_classes) on the pooled output; kernel [H, L] is
    # transposed to the original's [L, H] (see _HEAD_TRANSPOSED).
    "logits/0": "output_weights",
    "logits/1": "output_bias",
    # AlbertMaskedLM: the decoder is tied to the token embedding, as the original's.
    "mlm_head/intermediate_dense/0": "cls/predictions/transform/dense/kernel",
    "mlm_head/intermediate_dense/1": "cls/predictions/transform/dense/bias",
    "mlm_head/intermediate_layer_norm/0": "cls/predictions/transform/LayerNorm/gamma",
    "mlm_head/intermediate_layer_norm/1": "cls/predictions/transform/LayerNorm/beta",
    "mlm_head/0": "cls/predictions/output_bias",
}
_HEAD_TRANSPOSED = ("logits/0",)

# Under `group_{g}_inner_layer_{i}/` -> (original name under `.../group_g/inner_group_i/`, how
# keras' EinsumDense shapes fold into the original's 2-D ones).
_FOLD_HEADS_OUT = "[H, N, D] -> [H, N*D]"   # query/key/value kernels
_FOLD_BIAS = "[N, D] -> [N*D]"
_FOLD_HEADS_IN = "[N, D, H] -> [N*D, H]"    # the attention output kernel
_LAYER = {
    "self_attention_layer/query/0": ("attention_1/self/query/kernel", _FOLD_HEADS_OUT),
    "self_attention_layer/query/1": ("attention_1/self/query/bias", _FOLD_BIAS),
    "self_attention_layer/key/0": ("attention_1/self/key/kernel", _FOLD_HEADS_OUT),
    "self_attention_layer/key/1": ("attention_1/self/key/bias", _FOLD_BIAS),
    "self_attention_layer/value/0": ("attention_1/self/value/kernel", _FOLD_HEADS_OUT),
    "self_attention_layer/value/1": ("attention_1/self/value/bias", _FOLD_BIAS),
    "self_attention_layer/attention_output/0": ("attention_1/output/dense/kernel",
                                                _FOLD_HEADS_IN),
    "self_attention_layer/attention_output/1": ("attention_1/output/dense/bias", None),
    "self_attention_layer_norm/0": ("LayerNorm/gamma", None),
    "self_attention_layer_norm/1": ("LayerNorm/beta", None),
    "feedforward_intermediate_dense/0": ("ffn_1/intermediate/dense/kernel", None),
    "feedforward_intermediate_dense/1": ("ffn_1/intermediate/dense/bias", None),
    "feedforward_output_dense/0": ("ffn_1/intermediate/output/dense/kernel", None),
    "feedforward_output_dense/1": ("ffn_1/intermediate/output/dense/bias", None),
    "feedforward_layer_norm/0": ("LayerNorm_1/gamma", None),
    "feedforward_layer_norm/1": ("LayerNorm_1/beta", None),
}
_LAYER_NAME = re.compile(r"group_(\d+)_inner_layer_(\d+)/(.+)")
_PROJECTION = ("bert/encoder/embedding_hidden_mapping_in/kernel",
               "bert/encoder/embedding_hidden_mapping_in/bias")


def _read_json(path):
  try:
    return json.loads(io.read_text(path))
  except ValueError as e:
    raise errors.ConfigError(f"{path} is not valid JSON: {e}") from None


def _registered_name(values):
  return str(values.get("registered_name") or "") if isinstance(values, dict) else ""


def _broken_preset(path):
  """Why directory `path`, a keras-hub preset by its files (model.weights.h5 or metadata.json,
  which keras-hub's save_to_preset writes, or a config.json naming a keras_hub> class), cannot
  be read as one: config.json or model.weights.h5 missing, or config.json not valid JSON.
  None for an intact preset, and for anything that is no keras-hub preset at all (a Hugging
  Face directory among them: its config.json is transformers')."""
  from albert_tf.checkpoints import hf  # pylint: disable=import-outside-toplevel
  if not path or not io.isdir(os.fspath(path)) or hf.is_hf_checkpoint(path):
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


def check_preset(path):
  """Raises when `path` is a keras-hub preset missing a file or with a corrupt config.json
  (see _broken_preset): one error naming the file, before anything reads the directory as a
  checkpoint of another kind (and fails for another reason).

  Raises:
    errors.CheckpointError: naming the file and the fix.
  """
  problem = _broken_preset(path)
  if problem:
    raise errors.CheckpointError(problem)


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
  from albert_tf.core.config import AlbertConfig  # pylint: disable=import-outside-toplevel
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
  import h5py  # pylint: disable=import-outside-toplevel
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


def _fold(value, how):
  if how == _FOLD_HEADS_OUT:
    return value.reshape(value.shape[0], -1)
  if how == _FOLD_BIAS:
    return value.reshape(-1)
  if how == _FOLD_HEADS_IN:
    return value.reshape(-1, value.shape[-1])
  return value


def original_name(key):
  """The original TF1 name of keras-hub weight `key`, and how its value is reshaped (None: as
  it is), or (None, None) for a weight the original has no counterpart of."""
  match = _LAYER_NAME.fullmatch(key)
  if match and match.group(3) in _LAYER:
    group, inner, rest = match.groups()
    name, how = _LAYER[rest]
    return f"bert/encoder/transformer/group_{group}/inner_group_{inner}/{name}", how
  if key in _FIXED:
    return _FIXED[key], ("transpose" if key in _HEAD_TRANSPOSED else None)
  return None, None


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
      value = value.T if how == "transpose" else _fold(value, how)
      tensors[name] = np.ascontiguousarray(value, dtype=np.float32)
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
    model: any albert_tf model; build it from albert_config(path) (model_config does).
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
  # pylint: disable-next=import-outside-toplevel
  from albert_tf.checkpoints import layout, original
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
  kernel, bias = _PROJECTION
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


# -- what the binaries take from a preset -----------------------------------------------------
def model_config(albert_config_file, init_checkpoint):
  """The model config of a binary: a keras-hub preset's when --init_checkpoint is one (checked
  against --albert_config_file when that is given too), else hf.model_config's answer.

  Args:
    albert_config_file: --albert_config_file, or None.
    init_checkpoint: --init_checkpoint, or None.

  Returns:
    (AlbertConfig, the file it was read from).

  Raises:
    errors.ConfigError: --albert_config_file describes another model than the preset (names
      the field and both values).
    errors.UsageError: no config at all (see hf.model_config).
    errors.CheckpointError: a keras-hub preset missing a file or with a corrupt config.json
      (check_preset).
  """
  from albert_tf.checkpoints import hf  # pylint: disable=import-outside-toplevel
  check_preset(init_checkpoint)
  if not is_keras_hub_preset(init_checkpoint):
    return hf.model_config(albert_config_file, init_checkpoint)
  config = albert_config(init_checkpoint)
  preset_file = os.path.join(os.fspath(init_checkpoint), CONFIG_NAME)
  if not albert_config_file:
    return config, preset_file
  # pylint: disable-next=import-outside-toplevel
  from albert_tf.core.config import ARCHITECTURE_FIELDS, AlbertConfig
  given = AlbertConfig.from_json_file(albert_config_file)
  # Dropout is left out: keras-hub has one for both, and fine-tuning may choose its own.
  for field in ARCHITECTURE_FIELDS:
    if getattr(given, field) != getattr(config, field):
      raise errors.ConfigError(
          f"--albert_config_file={albert_config_file} contradicts the keras-hub preset "
          f"--init_checkpoint={init_checkpoint}: {field} is {getattr(given, field)!r} there and "
          f"{getattr(config, field)!r} in {preset_file}. Drop --albert_config_file (the preset "
          "has its config) or fix it")
  return given, albert_config_file


def spm_model_file(spm_model, vocab_file, init_checkpoint):
  """The SentencePiece model of a binary: --spm_model_file, else a keras-hub preset's
  vocabulary.spm, else an HF directory's spiece.model, else the one a fine-tuning run kept in
  its output_dir (companions.keep_tokenizer) beside the checkpoint (the last three when
  --vocab_file is not given either).

  Args:
    spm_model: --spm_model_file, or None.
    vocab_file: --vocab_file, or None.
    init_checkpoint: --init_checkpoint, or None.

  Returns:
    The file, or None (a WordPiece model, or nothing to take it from).

  Raises:
    errors.UsageError: --vocab_file (WordPiece) or another --spm_model_file than the one of a
      keras-hub preset --init_checkpoint.
    errors.CheckpointError: as check_preset.
  """
  # pylint: disable-next=import-outside-toplevel
  from albert_tf.checkpoints import companions, hf
  check_preset(init_checkpoint)
  if not is_keras_hub_preset(init_checkpoint):
    if spm_model or vocab_file:
      return spm_model
    return (hf.companion_file(init_checkpoint, hf.SPM_NAME)
            or companions.kept_spm_model(init_checkpoint))
  own = preset_spm_model(init_checkpoint)
  if vocab_file:
    raise errors.UsageError(
        f"--vocab_file={vocab_file} contradicts the keras-hub preset --init_checkpoint="
        f"{init_checkpoint}, whose tokenizer is SentencePiece ({SPM_PATH}): drop --vocab_file")
  if spm_model and own and io.sha256(spm_model) != io.sha256(own):
    raise errors.UsageError(
        f"--spm_model_file={spm_model} is not the SentencePiece model of the keras-hub preset "
        f"--init_checkpoint={init_checkpoint} ({own}): drop --spm_model_file to use the "
        "preset's")
  return spm_model or own
