"""Hugging Face transformers' ALBERT config.json (and tokenizer_config.json) <-> AlbertConfig.

transformers' ALBERT is the original architecture under other names, with a few settings the
original fixes: its activation names (HF's "gelu_new" is the original's tanh GELU, HF's "gelu" the
exact erf form the original has not), layer_norm_eps (the original's is 1e-12), and
position_embedding_type (the original's is absolute). A config.json that sets one of them
otherwise describes a model the original cannot express, and is refused naming the key.
transformers shares whole layers within groups, never one sub-block, so only the all-shared and
not-shared parameter sharings go to or come from it. No TensorFlow here.
"""

import json
import os

from albert_tf.core import errors, io
from albert_tf.core import config as configs
from albert_tf.core.config import AlbertConfig

CONFIG_NAME = "config.json"
# transformers' activation names -> ours. HF's "gelu" is the exact erf GELU: not listed.
HF_ACTIVATIONS = {"gelu_new": "gelu", "gelu_pytorch_tanh": "gelu", "relu": "relu",
                  "tanh": "tanh", "linear": "linear"}
# The original's layer norm epsilon (tf.contrib.layers.layer_norm's), fixed in the model.
LAYER_NORM_EPS = 1e-12
# What transformers' AlbertModel can hold: it shares whole layers within groups, nothing finer.
HF_SHARING = ("all-shared", "not-shared")


def read_hf_config_json(path):
  """The dict of an HF config.json file (clear errors naming it)."""
  if not io.exists(path):
    raise FileNotFoundError(f"Hugging Face config file not found: {path}")
  try:
    values = json.loads(io.read_text(path))
  except json.JSONDecodeError as e:
    raise errors.ConfigError(f"Hugging Face config file {path} is not valid JSON: {e}") from e
  if not isinstance(values, dict):
    raise errors.ConfigError(f"Hugging Face config file {path} must hold a JSON object")
  return values


def from_hf_config(path: str) -> AlbertConfig:
  """Reads a Hugging Face transformers ALBERT `config.json`.

  HF's `gelu_new` (and `gelu_pytorch_tanh`) is the original's tanh-approximation GELU, our
  "gelu"; HF's `gelu` is the exact erf form, which the original has not. `num_labels` (or the
  length of `id2label`) and `classifier_dropout_prob` are kept as extra keys.

  Args:
    path: str. The config.json, or the directory holding it.

  Returns:
    The validated AlbertConfig.

  Raises:
    FileNotFoundError: when there is no such file.
    ValueError: naming the file and the key, for a config the original architecture cannot
      express: hidden_act `gelu` (exact erf) or another HF activation, layer_norm_eps other than
      1e-12, position_embedding_type other than "absolute", a model_type other than "albert".
  """
  if io.isdir(path):
    path = os.path.join(path, CONFIG_NAME)
  values = read_hf_config_json(path)
  if values.get("model_type", "albert") != "albert":
    raise errors.ConfigError(f"{path}: model_type is {values['model_type']!r}, not 'albert'")
  fields = {k: values[k] for k in configs.FIELDS if k in values and k != "hidden_act"}
  act = values.get("hidden_act", "gelu_new")
  if act not in HF_ACTIVATIONS:
    raise errors.ConfigError(
        f"{path}: hidden_act {act!r} has no counterpart in the original ALBERT. Its GELU is "
        "the tanh approximation, HF's 'gelu_new'; HF's 'gelu' is the exact erf form, whose "
        "outputs differ. Supported: " + ", ".join(sorted(HF_ACTIVATIONS)))
  fields["hidden_act"] = HF_ACTIVATIONS[act]
  eps = values.get("layer_norm_eps", LAYER_NORM_EPS)
  if eps != LAYER_NORM_EPS:
    raise errors.ConfigError(
        f"{path}: layer_norm_eps is {eps!r}; the original ALBERT's layer norm "
        f"uses {LAYER_NORM_EPS} (this model cannot change it)")
  position = values.get("position_embedding_type", "absolute")
  if position != "absolute":
    raise errors.ConfigError(
        f"{path}: position_embedding_type is {position!r}; the original ALBERT "
        "has only 'absolute'")
  if "id2label" in values or "num_labels" in values:
    fields["num_labels"] = values.get("num_labels", len(values.get("id2label") or {}))
  if "classifier_dropout_prob" in values:
    fields["classifier_dropout_prob"] = values["classifier_dropout_prob"]
  try:
    return AlbertConfig.from_dict(fields)
  except ValueError as e:
    raise errors.ConfigError(f"{path}: {e}") from e


def check_hf_can_hold(config: AlbertConfig) -> None:
  """Raises unless transformers' ALBERT can hold the model of `config` (see to_hf_config).

  Raises:
    ValueError: for parameter_sharing shared-attention or shared-FFN.
  """
  if config.parameter_sharing not in HF_SHARING:
    raise errors.ConfigError(
        f"albert config: parameter_sharing {config.parameter_sharing!r} has no Hugging Face "
        "counterpart: transformers' ALBERT shares whole layers within num_hidden_groups "
        f"groups, never the attention or the FFN alone. Only {HF_SHARING} models go to or "
        "come from HF; keep this one in the released layout, ours or .keras")


def to_hf_config(config: AlbertConfig, architecture: str = "AlbertForPreTraining",
                 num_labels: int | None = None) -> dict:
  """`config` as transformers' ALBERT `config.json` holds it (see `from_hf_config`).

  Args:
    config: the AlbertConfig.
    architecture: str. The transformers class written under `architectures`.
    num_labels: int or None. Written as id2label / label2id (LABEL_0, ...); None takes the
      config's extra key `num_labels` if any.

  Returns:
    A new dict, ready for json.dump. A not-shared model is written as num_hidden_groups =
    num_hidden_layers, the same model in HF's terms (from_hf_config reads it back as that).

  Raises:
    ValueError: for parameter_sharing shared-attention or shared-FFN, which HF's ALBERT cannot
      hold (it shares whole layers within groups, never one sub-block).
  """
  check_hf_can_hold(config)
  act = config.hidden_act.lower()
  values = {k: getattr(config, k) for k in configs.FIELDS
            if k not in ("hidden_act", "down_scale_factor", "parameter_sharing")}
  values.update({
      "num_hidden_groups": config.num_parameter_groups,
      "architectures": [architecture],
      "model_type": "albert",
      "hidden_act": "gelu_new" if act == "gelu" else act,
      "layer_norm_eps": LAYER_NORM_EPS,
      "position_embedding_type": "absolute",
      "classifier_dropout_prob": config.extra.get("classifier_dropout_prob", 0.1),
      # The original vocabulary's <pad>, [CLS], [SEP].
      "pad_token_id": 0, "bos_token_id": 2, "eos_token_id": 3,
      "tie_word_embeddings": True,
      "dtype": "float32",
  })
  if num_labels is None:
    num_labels = config.extra.get("num_labels")
  if num_labels is not None:
    values["id2label"] = {str(i): f"LABEL_{i}" for i in range(num_labels)}
    values["label2id"] = {f"LABEL_{i}": i for i in range(num_labels)}
  return values


def check_configs_agree(config, config_file, hf_config_file):
  """Raises unless the AlbertConfig `config` (read from `config_file`, --albert_config_file) and
  the HF config.json `hf_config_file` of the checkpoint describe the same model: every field
  they share (sizes, vocab_size, hidden_act, dropouts, initializer_range, ...) equal, HF's
  activation and layer_norm_eps one the original has (the checkpoint was trained with them).

  Raises:
    ValueError: naming both files, the field and both values.
  """
  values = read_hf_config_json(hf_config_file)

  def disagree(field, ours, theirs, why=""):
    return errors.ConfigError(
        f"--albert_config_file={config_file} and {hf_config_file} (the config.json of "
        f"--init_checkpoint) disagree on `{field}`: {ours!r} vs {theirs!r}{why}. The checkpoint "
        f"was trained with its config.json: drop --albert_config_file to use it, or fix "
        f"{config_file}")

  act = values.get("hidden_act", "gelu_new")
  if HF_ACTIVATIONS.get(act) != str(config.hidden_act).lower():
    why = (" (HF's 'gelu' is the exact erf GELU, which the original ALBERT has not; our 'gelu' "
           "is HF's 'gelu_new', the tanh approximation)" if act == "gelu" else "")
    raise disagree("hidden_act", config.hidden_act, act, why)
  if values.get("layer_norm_eps", LAYER_NORM_EPS) != LAYER_NORM_EPS:
    raise disagree("layer_norm_eps", LAYER_NORM_EPS, values["layer_norm_eps"],
                   " (the original ALBERT's layer norm epsilon, fixed in this model)")
  for field, expected in (("position_embedding_type", "absolute"), ("model_type", "albert")):
    if values.get(field, expected) != expected:
      raise disagree(field, expected, values[field], " (the only one the original ALBERT has)")
  for field in configs.FIELDS:
    if field != "hidden_act" and field in values and values[field] != getattr(config, field):
      raise disagree(field, getattr(config, field), values[field])


def tokenizer_config(config, do_lower_case=True):
  """transformers' AlbertTokenizer settings for the original's SentencePiece preprocessing
  (albert_tf.tokenization: spaces collapsed, accents stripped, lower-cased when asked)."""
  return {
      "tokenizer_class": "AlbertTokenizer",
      "do_lower_case": bool(do_lower_case),
      "remove_space": True,
      "keep_accents": False,
      "bos_token": "[CLS]",
      "eos_token": "[SEP]",
      "cls_token": "[CLS]",
      "sep_token": "[SEP]",
      "unk_token": "<unk>",
      "pad_token": "<pad>",
      "mask_token": "[MASK]",
      "model_max_length": config.max_position_embeddings,
  }
