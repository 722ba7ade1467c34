"""AlbertConfig: the model hyper-parameters, read from and written to `albert_config.json`.

The released configs carry keys the model does not use (net_structure_type, gap_size,
num_memory_blocks, ...). They are kept verbatim so that reading then writing a config changes
nothing.
"""

import copy
import difflib
import json
import logging
import math
import os

from albert_tf.core import deprecation, errors
from albert_tf.core import io

logger = logging.getLogger("albert_tf")

# data/configs/, linked as albert_tf/configs so that the installed package ships them.
_DATA_CONFIG_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "configs")

ACTIVATIONS = ("gelu", "relu", "tanh", "linear")

# Cross-layer sharing within each of num_hidden_groups groups (the paper's Table 4): every
# sub-block shared (the original's only model), the attention sub-block shared with a per-layer
# FFN, the FFN shared with per-layer attention, or nothing shared (one group per layer).
PARAMETER_SHARING = ("all-shared", "shared-attention", "shared-FFN", "not-shared")

# Field -> default, as the original AlbertConfig defines them (xxlarge-shaped defaults).
_DEFAULTS = {
    "vocab_size": None,
    "embedding_size": 128,
    "hidden_size": 4096,
    "num_hidden_layers": 12,
    "num_hidden_groups": 1,
    "num_attention_heads": 64,
    "intermediate_size": 16384,
    "inner_group_num": 1,
    "down_scale_factor": 1,
    "hidden_act": "gelu",
    "hidden_dropout_prob": 0.0,
    "attention_probs_dropout_prob": 0.0,
    "max_position_embeddings": 512,
    "type_vocab_size": 2,
    "initializer_range": 0.02,
    "parameter_sharing": "all-shared",
}
# The fields of every config, in the original's order.
FIELDS = tuple(_DEFAULTS)

# Fields the original has not: written back only when given or not their default.
_OURS_ONLY = ("parameter_sharing",)
# Keys the released configs carry that the model does not use: kept without a warning.
_RELEASED_UNUSED = ("net_structure_type", "gap_size", "num_memory_blocks")
# Task-head settings a config may carry (a Hugging Face config.json's, which
# checkpoints.hf_config keeps): kept without a warning.
_HEAD_EXTRAS = ("num_labels", "classifier_dropout_prob")

# How alike (difflib ratio) an unknown key must be to a field to be taken for its typo:
# hidden_sise, embeding_size or num_hidden_layer are; the released extras above are not.
_TYPO_CUTOFF = 0.8

_PROBABILITIES = ("hidden_dropout_prob", "attention_probs_dropout_prob")

# How the transformer layers are laid out in variables: a checkpoint's loader checks them itself
# (and --init_from_group0 starts a model with more groups from a checkpoint with fewer).
LAYER_LAYOUT_FIELDS = ("num_hidden_layers", "num_hidden_groups", "inner_group_num",
                       "parameter_sharing")
# The fields that make the model what a checkpoint was trained as: the layout above, the sizes,
# the activation. The dropouts and initializer_range are left out: fine-tuning may choose its
# own.
ARCHITECTURE_FIELDS = ("vocab_size", "embedding_size", "hidden_size", "num_attention_heads",
                       "intermediate_size", "down_scale_factor", "hidden_act",
                       "max_position_embeddings", "type_vocab_size") + LAYER_LAYOUT_FIELDS

_POSITIVE_INTS = ("vocab_size", "embedding_size", "hidden_size", "num_hidden_layers",
                  "num_attention_heads", "intermediate_size", "inner_group_num",
                  "max_position_embeddings", "type_vocab_size", "num_hidden_groups")


class AlbertConfig:
  """Hyper-parameters of an ALBERT model (the original's `albert_config.json`), with validation.

  Every field below is an attribute; any other key (the released configs' net_structure_type,
  gap_size, num_memory_blocks, ...) is kept in `extra` and written back unchanged.

  Args:
    vocab_size: int. V, the number of token ids (required).
    **kwargs: the other fields, each defaulting as the original's AlbertConfig:
      embedding_size (E, 128), hidden_size (H, 4096), num_hidden_layers (12),
      num_hidden_groups (1), num_attention_heads (64), intermediate_size (16384),
      inner_group_num (1), down_scale_factor (1), hidden_act ("gelu"; also "relu", "tanh",
      "linear"), hidden_dropout_prob (0.0), attention_probs_dropout_prob (0.0),
      max_position_embeddings (512), type_vocab_size (2), initializer_range (0.02),
      parameter_sharing ("all-shared"; also "shared-attention", "shared-FFN", "not-shared": what
      the layers of each group share, see PARAMETER_SHARING; not in the original, whose
      from_dict ignores it); and any extra key, kept as it is.

  Raises:
    ValueError: for an invalid value (see `validate`), or an unknown key that looks like a typo
      of a field (hidden_sise): the model would otherwise silently take that field's default.

  Example:

  >>> import albert_tf
  >>> config = albert_tf.AlbertConfig(vocab_size=100, embedding_size=8, hidden_size=16,
  ...                                 num_hidden_layers=2, num_attention_heads=2,
  ...                                 intermediate_size=32)
  >>> config.hidden_size, config.max_position_embeddings
  (16, 512)
  >>> config.replace(num_hidden_groups=2).num_hidden_groups
  2
  """

  def __init__(self, vocab_size: int | None = None, **kwargs):
    values = dict(_DEFAULTS)
    values["vocab_size"] = vocab_size
    self.extra = {}
    for key, value in kwargs.items():
      if key in values:
        values[key] = value
      else:
        _check_unknown_key(key, kwargs)
        self.extra[key] = value
    for key, value in values.items():
      setattr(self, key, value)
    self._key_order = list(kwargs) if kwargs else list(values)
    if "vocab_size" not in self._key_order:
      self._key_order.insert(0, "vocab_size")
    self.validate()

  # ---------------------------------------------------------------------------------------------
  def validate(self) -> None:
    """Checks that the config describes a model.

    Raises:
      ValueError: naming the offending key: a size that is not a positive int, hidden_size not
        a multiple of num_attention_heads, num_hidden_groups outside [1, num_hidden_layers], an
        unknown hidden_act, a dropout probability outside [0, 1), a non-positive
        initializer_range, or a parameter_sharing not in PARAMETER_SHARING.
    """
    for key in _POSITIVE_INTS:
      value = getattr(self, key)
      if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise errors.ConfigError(
            f"albert config: `{key}` must be a positive integer, got {value!r}")
    if self.hidden_size % self.num_attention_heads:
      raise errors.ConfigError(
          f"albert config: `hidden_size` ({self.hidden_size}) must be a multiple of "
          f"`num_attention_heads` ({self.num_attention_heads})")
    if not 1 <= self.num_hidden_groups <= self.num_hidden_layers:
      raise errors.ConfigError(
          f"albert config: `num_hidden_groups` ({self.num_hidden_groups}) must be between 1 and "
          f"`num_hidden_layers` ({self.num_hidden_layers})")
    act = self.hidden_act
    if not isinstance(act, str) or act.lower() not in ACTIVATIONS:
      raise errors.ConfigError(
          f"albert config: `hidden_act` must be one of {ACTIVATIONS}, got {act!r}")
    for key in _PROBABILITIES:
      value = getattr(self, key)
      if not _is_number(value) or not 0.0 <= value < 1.0:
        raise errors.ConfigError(
            f"albert config: `{key}` must be a number in [0, 1), got {value!r}")
    if not _is_number(self.initializer_range) or self.initializer_range <= 0:
      raise errors.ConfigError(f"albert config: `initializer_range` must be a positive number, got "
                               f"{self.initializer_range!r}")
    if self.parameter_sharing not in PARAMETER_SHARING:
      raise errors.ConfigError(
          f"albert config: `parameter_sharing` must be one of {PARAMETER_SHARING}, "
          f"got {self.parameter_sharing!r}{_did_you_mean(self.parameter_sharing)}")

  @property
  def num_parameter_groups(self) -> int:
    """The number of layer groups the encoder holds: num_hidden_layers when not-shared (one
    group per layer, the same model and variables as num_hidden_groups = num_hidden_layers),
    else num_hidden_groups."""
    if self.parameter_sharing == "not-shared":
      return self.num_hidden_layers
    return self.num_hidden_groups

  # ---------------------------------------------------------------------------------------------
  @classmethod
  def from_dict(cls, values: dict) -> "AlbertConfig":
    """A config from a dict of fields (as `to_dict` or `albert_config.json` holds them).

    Args:
      values: dict. Must hold `vocab_size`; other fields default as in the constructor.

    Returns:
      The validated AlbertConfig.

    Raises:
      ValueError: when `vocab_size` is missing, or as the constructor.
    """
    if "vocab_size" not in values:
      raise errors.ConfigError("albert config: missing required key `vocab_size`")
    return cls(**values)

  @classmethod
  def from_json_file(cls, path: str) -> "AlbertConfig":
    """Reads an `albert_config.json`.

    Args:
      path: str. The JSON file: one object of fields.

    Returns:
      The validated AlbertConfig, keys in the file's order.

    Raises:
      FileNotFoundError: when `path` does not exist.
      ValueError: naming `path`, when it is not a JSON object or its values are invalid.
    """
    try:
      values = io.load_json(path, "albert config file")
    except json.JSONDecodeError as e:
      raise errors.ConfigError(f"albert config file {path} is not valid JSON: {e}") from e
    if not isinstance(values, dict):
      raise errors.ConfigError(f"albert config file {path} must hold a JSON object")
    try:
      return cls.from_dict(values)
    except ValueError as e:
      raise errors.ConfigError(f"{path}: {e}") from e

  @classmethod
  def from_preset(cls, name: str) -> "AlbertConfig":
    """A released v2 config by name (from data/configs/).

    Args:
      name: str. "base", "large", "xlarge" or "xxlarge".

    Returns:
      The AlbertConfig of that released model.

    Raises:
      ValueError: for an unknown name, listing the known ones.
    """
    path = os.path.join(_DATA_CONFIG_DIR, f"albert_{name}_v2.json")
    if not io.exists(path):
      known = sorted(f[len("albert_"):-len("_v2.json")] for f in io.listdir(_DATA_CONFIG_DIR)
                     if f.startswith("albert_") and f.endswith("_v2.json"))
      raise errors.ConfigError(f"unknown ALBERT preset {name!r}; known presets: {known}")
    return cls.from_json_file(path)

  def to_dict(self) -> dict:
    """Every field and extra key: those read from JSON first, in their order, then the others.
    parameter_sharing, which the original has not, only when given or not its default.

    Returns:
      A new dict (a deep copy: changing it leaves the config unchanged).
    """
    out = {}
    keys = self._key_order + [k for k in list(_DEFAULTS) + list(self.extra)
                              if k not in self._key_order]
    for key in keys:
      if key in _OURS_ONLY and key not in self._key_order and getattr(self, key) == _DEFAULTS[key]:
        continue  # a released config read and written back stays as it was
      if key in _DEFAULTS:
        out[key] = getattr(self, key)
      elif key in self.extra:
        out[key] = self.extra[key]
    return copy.deepcopy(out)

  def to_json_string(self) -> str:
    """`to_dict()` as indented JSON, keys sorted, with a final newline."""
    return json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n"

  def to_json_file(self, path: str) -> None:
    """Writes `to_json_string()` to `path` atomically (a hidden temporary file, then a rename).

    Args:
      path: str. The file to write (replaced if it exists); its directory is created if missing.
    """
    io.write_text_atomically(path, self.to_json_string())

  def replace(self, **changes) -> "AlbertConfig":
    """A copy with some fields changed.

    Args:
      **changes: fields and their new values.

    Returns:
      A new, validated AlbertConfig.

    Raises:
      ValueError: as the constructor, for an invalid value or a likely typo of a field.
    """
    values = self.to_dict()
    values.update(changes)
    return AlbertConfig.from_dict(values)

  # Hugging Face's config.json moved to the interop layer (albert_tf.checkpoints.hf_config).
  from_hf_config = deprecation.moved_function(
      "albert_tf.AlbertConfig.from_hf_config",
      "albert_tf.checkpoints.hf_config.from_hf_config")
  to_hf_config = deprecation.moved_function(
      "albert_tf.AlbertConfig.to_hf_config",
      "albert_tf.checkpoints.hf_config.to_hf_config", bound=True)

  def differences(self, other: "AlbertConfig", fields=ARCHITECTURE_FIELDS) -> list:
    """`field: this value vs other's` for each of `fields` in which `other` differs (hidden_act
    compared without case), in the order of `fields`."""
    def value(config, field):
      value = getattr(config, field)
      return value.lower() if field == "hidden_act" and isinstance(value, str) else value
    return [f"{field}: {getattr(self, field)!r} vs {getattr(other, field)!r}" for field in fields
            if value(self, field) != value(other, field)]

  def __eq__(self, other):
    return isinstance(other, AlbertConfig) and self.to_dict() == other.to_dict()

  def __repr__(self):
    return f"AlbertConfig({self.to_dict()})"


def check_max_seq_length(max_seq_length: int, config: AlbertConfig, source: str,
                         flag: str = "--max_seq_length") -> None:
  """Refuses a sequence length the model has no position embedding for: the one check of every
  job and export that takes a length from its settings (requests are checked in the serving
  graph instead, export.serving_inputs).

  Args:
    max_seq_length: the length asked for.
    config: the AlbertConfig of the model.
    source: where `config` came from, named in the error: its file, or the checkpoint or model
      it was read from when there is no file.
    flag: the flag (or argument) that gave max_seq_length.

  Raises:
    errors.UsageError: max_seq_length > config.max_position_embeddings, in one line naming
      `flag`, the limit and `source`.
  """
  limit = config.max_position_embeddings
  if max_seq_length > limit:
    raise errors.UsageError(
        f"{flag}={max_seq_length}: cannot use sequence length {max_seq_length} because the "
        f"ALBERT model was only trained up to sequence length {limit} (max_position_embeddings "
        f"in {source}); give {flag}={limit} or less")


def _check_unknown_key(key, given):
  """Raises for a likely typo of a field: the model would silently take that field's default
  (hidden_sise: a 4096-wide model). Warns about other keys the model does not use."""
  if key in _RELEASED_UNUSED or key in _HEAD_EXTRAS:
    return
  close = difflib.get_close_matches(key, list(_DEFAULTS), n=1, cutoff=_TYPO_CUTOFF)
  if close:
    field = close[0]
    effect = ("is given too: drop one of them" if field in given else
              f"would otherwise keep its default, {_DEFAULTS[field]!r}: rename the key")
    raise errors.ConfigError(
        f"albert config: unknown key `{key}`, did you mean `{field}`? (`{field}` "
        f"{effect})")
  logger.warning("albert config: unknown key `%s` is not used by the model (kept as it is)", key)


def _did_you_mean(value):
  """", did you mean 'shared-FFN'?" for a near miss of a PARAMETER_SHARING value, else ""."""
  if not isinstance(value, str):
    return ""
  lowered = {v.lower(): v for v in PARAMETER_SHARING}
  close = difflib.get_close_matches(value.lower().replace("_", "-"), list(lowered), n=1,
                                    cutoff=0.6)
  return f", did you mean {lowered[close[0]]!r}?" if close else ""


def _is_number(value):
  # JSON `true` arrives as a bool, which Python would otherwise take for the number 1.
  return (isinstance(value, (int, float)) and not isinstance(value, bool)
          and math.isfinite(value))
