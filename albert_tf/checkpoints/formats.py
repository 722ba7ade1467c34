"""Which format a checkpoint is in, and what follows from it: loading any of them, its global
step, and the config and tokenizer a binary takes from it.

The one module that knows every format: the released TF1 layout (checkpoints.original), ours
(checkpoints.ours), Hugging Face's (checkpoints.hf: a `*.safetensors` file or a directory holding
model.safetensors) and keras-hub presets (checkpoints.keras_hub: a directory with a keras-hub
config.json and model.weights.h5). Each of those reads its own format and imports none of the
others' detection; this one asks each in turn.
"""

import os

import keras

from albert_tf.core import errors, io
from albert_tf.core.config import ARCHITECTURE_FIELDS, AlbertConfig
from albert_tf.checkpoints import companions, hf, keras_hub, original, ours


def _given(path):
  return path is not None and bool(str(path))


def is_foreign_layout(path) -> bool:
  """True for a checkpoint that is no TF checkpoint at all: a Hugging Face one (safetensors) or
  a keras-hub preset (.weights.h5); they hold no global step and no object graph."""
  return bool(path) and (hf.is_hf_checkpoint(path) or keras_hub.is_keras_hub_preset(path))


def check_preset(path):
  """Raises when `path` is a keras-hub preset missing a file or with a corrupt config.json
  (keras_hub.preset_problem): one error naming the file, before anything reads the directory as
  a checkpoint of another kind (and fails for another reason). A Hugging Face directory is never
  one (its config.json is transformers').

  Raises:
    errors.CheckpointError: naming the file and the fix.
  """
  if path and hf.is_hf_checkpoint(path):
    return
  problem = keras_hub.preset_problem(path)
  if problem:
    raise errors.CheckpointError(problem)


def checkpoint_global_step(path):
  """The global step stored in a checkpoint of either layout (0 when it holds none, as a
  Hugging Face checkpoint or a keras-hub preset)."""
  if is_foreign_layout(path):
    return 0
  reader = original.checkpoint_reader(original.resolve_checkpoint_path(path))
  for name in ("global_step", "global_step/.ATTRIBUTES/VARIABLE_VALUE"):
    if reader.has_tensor(name):
      return int(reader.get_tensor(name))
  return 0


def load_checkpoint(model: keras.Model, path: str,
                    init_from_group0: bool = False) -> original.LoadReport:
  """Loads weights from a released/original TF1 checkpoint, one of ours, a Hugging Face one or a
  keras-hub preset.

  The layout is detected (a `*.safetensors` file or a directory holding model.safetensors is
  Hugging Face's, see checkpoints.hf; a directory with a keras-hub config.json and
  model.weights.h5 is a keras-hub preset, see checkpoints.keras_hub). Only model weights are
  read (no optimizer state). Every layout follows the same rules: a task head the checkpoint
  lacks stays as initialised (listed as missing).

  Args:
    model: any albert_tf model (AlbertModel, AlbertPretrainer, AlbertClassifier, ...).
    path: a checkpoint prefix or a directory (its latest checkpoint), an HF directory or
      model.safetensors, or a keras-hub preset directory; any TF file system.
    init_from_group0: initialise layer groups the checkpoint lacks from its group 0.

  Returns:
    A LoadReport: loaded, missing and unused variables (its str() is a one-line summary).

  Raises:
    ValueError: a variable of another shape (names it and both shapes).
    KeyError: encoder variables the checkpoint lacks (the config does not match it).
    errors.CheckpointError: a keras-hub preset missing a file or with a corrupt config.json
      (check_preset).
  """
  # A keras-hub preset missing a file would otherwise be read as a TF checkpoint directory.
  check_preset(path)
  if _given(path) and hf.is_hf_checkpoint(path):
    return hf.load_hf_checkpoint(model, path, init_from_group0=init_from_group0)
  if _given(path) and keras_hub.is_keras_hub_preset(path):
    return keras_hub.load_keras_hub_preset(model, path, init_from_group0=init_from_group0)
  prefix = original.resolve_checkpoint_path(path)
  if ours.is_original_layout(prefix):
    return original.load_original_checkpoint(model, prefix, init_from_group0=init_from_group0)
  return ours.load_ours_checkpoint(model, prefix, init_from_group0)


# -- what the binaries take from a checkpoint -----------------------------------------------------
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
  check_preset(init_checkpoint)
  if not keras_hub.is_keras_hub_preset(init_checkpoint):
    return hf.model_config(albert_config_file, init_checkpoint)
  config = keras_hub.albert_config(init_checkpoint)
  preset_file = os.path.join(os.fspath(init_checkpoint), keras_hub.CONFIG_NAME)
  if not albert_config_file:
    return config, preset_file
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
  check_preset(init_checkpoint)
  if not keras_hub.is_keras_hub_preset(init_checkpoint):
    if spm_model or vocab_file:
      return spm_model
    return (hf.companion_file(init_checkpoint, hf.SPM_NAME)
            or companions.kept_spm_model(init_checkpoint))
  own = keras_hub.preset_spm_model(init_checkpoint)
  if vocab_file:
    raise errors.UsageError(
        f"--vocab_file={vocab_file} contradicts the keras-hub preset --init_checkpoint="
        f"{init_checkpoint}, whose tokenizer is SentencePiece ({keras_hub.SPM_PATH}): drop "
        "--vocab_file")
  if spm_model and own and io.sha256(spm_model) != io.sha256(own):
    raise errors.UsageError(
        f"--spm_model_file={spm_model} is not the SentencePiece model of the keras-hub preset "
        f"--init_checkpoint={init_checkpoint} ({own}): drop --spm_model_file to use the "
        "preset's")
  return spm_model or own
