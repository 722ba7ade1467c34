"""The functions of a checkpoint path that albert_tf has always had: loading any format, its
global step, and the config and tokenizer a binary takes from it. Each opens the checkpoint
(checkpoints.opened: the one place that detects the format and checks what it keeps) and asks
it; code that asks more than one question opens it once itself.
"""

import keras

from albert_tf.core import errors
from albert_tf.checkpoints import hf, original
from albert_tf.checkpoints.opened import open_checkpoint


def _opened(path):
  """open_checkpoint(path), refusing no path."""
  if path is None or not str(path):
    raise errors.UsageError("no checkpoint path given")
  return open_checkpoint(path)


def checkpoint_global_step(path):
  """The global step stored in a checkpoint of any layout (0 when it holds none, as a
  Hugging Face checkpoint or a keras-hub preset): opened.OpenedCheckpoint.global_step."""
  return _opened(path).global_step


def load_checkpoint(model: keras.Model, path: str,
                    init_from_group0: bool = False) -> original.LoadReport:
  """Loads weights from a released/original TF1 checkpoint, one of ours, a Hugging Face one or a
  keras-hub preset (opened.open_checkpoint, then OpenedCheckpoint.load_into).

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
      (opened.open_checkpoint); a checkpoint file that cannot be read.
  """
  return _opened(path).load_into(model, init_from_group0)


# -- what the binaries take from a checkpoint -----------------------------------------------------
def model_config(albert_config_file, init_checkpoint):
  """The model config of a binary: OpenedCheckpoint.config of --init_checkpoint, or
  --albert_config_file alone without one.

  Args:
    albert_config_file: --albert_config_file, or None.
    init_checkpoint: --init_checkpoint, or None.

  Returns:
    (AlbertConfig, the file it was read from).

  Raises:
    errors.ConfigError: --albert_config_file describes another model than the checkpoint's
      (names the field and both values).
    errors.UsageError: no config at all (see hf.model_config).
    errors.CheckpointError: a keras-hub preset missing a file or with a corrupt config.json
      (opened.open_checkpoint).
  """
  opened = open_checkpoint(init_checkpoint)
  if opened is None:
    return hf.model_config(albert_config_file, None)
  return opened.config(albert_config_file)


def spm_model_file(spm_model, vocab_file, init_checkpoint):
  """The SentencePiece model of a binary: --spm_model_file, else the one --init_checkpoint
  keeps (a keras-hub preset's vocabulary.spm, an HF directory's spiece.model, or the one a
  fine-tuning run kept in its output_dir: OpenedCheckpoint.tokenizer).

  Args:
    spm_model: --spm_model_file, or None.
    vocab_file: --vocab_file, or None.
    init_checkpoint: --init_checkpoint, or None.

  Returns:
    The file, or None (a WordPiece model, or nothing to take it from).

  Raises:
    errors.UsageError: a tokenizer other than the one --init_checkpoint keeps (names both).
    errors.CheckpointError: as opened.open_checkpoint.
  """
  opened = open_checkpoint(init_checkpoint)
  if opened is None:
    return spm_model
  return opened.tokenizer(spm_model, vocab_file)[0]
