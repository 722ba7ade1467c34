"""What a run keeps beside its checkpoints, which makes its output_dir (or a checkpoint prefix in
it, `.../model.ckpt-best`) a checkpoint to point --init_checkpoint at without naming its config
or tokenizer again: albert_config.json (every training run writes it: training.job's
keep_config; the released models' directories hold it too), classifier_labels.json
(run_classifier; read by albert_tf.checkpoints.labels) and the tokenizer, copied in by
keep_tokenizer under a fixed name.
"""

import os

from albert_tf.core import errors
from albert_tf.core import io

# The name every run keeps its config under (training.job.CONFIG_FILE), as the released models.
CONFIG_NAME = "albert_config.json"
# The kept tokenizer's names: the SentencePiece model under Hugging Face's name for it (the
# same file), a WordPiece vocabulary under BERT's.
SPM_NAME = "spiece.model"
VOCAB_NAME = "vocab.txt"


def checkpoint_directory(init_checkpoint):
  """The directory a checkpoint is in: `init_checkpoint` itself when it is a directory (an
  output_dir), else the one holding the prefix; None for no checkpoint."""
  if not init_checkpoint:
    return None
  path = os.fspath(init_checkpoint)
  # The prefix test first, as original.resolve_checkpoint_path: some file systems (ram://) call
  # any leading part of a file name a directory.
  if not io.exists(path + ".index") and io.isdir(path):
    return path
  return io.dirname(path)


def beside(init_checkpoint, name):
  """`<the checkpoint's directory>/<name>` when that file exists, else None."""
  directory = checkpoint_directory(init_checkpoint)
  if directory is None:
    return None
  path = os.path.join(directory, name) if directory else name
  return path if io.exists(path) else None


def check_config_beside(config, config_file, init_checkpoint):
  """Refuses --albert_config_file (`config`, read from `config_file`) when the albert_config.json
  beside --init_checkpoint describes another architecture (sizes, activation, vocabulary,
  positions). The layers' layout is left to the loader, which checks it (and --init_from_group0
  grows it); the dropouts to fine-tuning.

  Raises:
    errors.ConfigError: naming both files and each field with both values.
  """
  # pylint: disable-next=import-outside-toplevel
  from albert_tf.core.config import ARCHITECTURE_FIELDS, LAYER_LAYOUT_FIELDS, AlbertConfig
  kept = beside(init_checkpoint, CONFIG_NAME)
  if kept is None:
    return
  fields = [f for f in ARCHITECTURE_FIELDS if f not in LAYER_LAYOUT_FIELDS]
  differences = config.differences(AlbertConfig.from_json_file(kept), fields)
  if differences:
    raise errors.ConfigError(
        f"--albert_config_file={config_file} and {kept} (the config beside --init_checkpoint="
        f"{init_checkpoint}) disagree on the architecture: {'; '.join(differences)}. The "
        f"checkpoint was trained with {kept}: drop --albert_config_file to use it, or fix "
        f"{config_file}")


def kept_spm_model(init_checkpoint):
  """The SentencePiece model keep_tokenizer copied beside --init_checkpoint, or None."""
  return beside(init_checkpoint, SPM_NAME)


def wordpiece_vocab_file(spm_model, vocab_file, init_checkpoint):
  """The WordPiece vocabulary of a binary: --vocab_file, else (no SentencePiece model either)
  the one keep_tokenizer copied beside --init_checkpoint; None for a SentencePiece model or
  none to take it from."""
  return vocab_file or (None if spm_model else beside(init_checkpoint, VOCAB_NAME))


def keep_tokenizer(output_dir, tokenizer):
  """Copies a fine-tuning run's tokenizer into output_dir (SPM_NAME for its SentencePiece model,
  else VOCAB_NAME for its WordPiece vocabulary), atomically, unless the same file is there:
  output_dir then carries its tokenizer as it carries its config.

  Args:
    output_dir: the run's output_dir.
    tokenizer: a settings.TokenizerSettings (spm_model_file, or vocab_file).

  Returns:
    The kept file, or None for a run without a tokenizer file.

  Raises:
    errors.ResumeMismatchError: output_dir keeps another tokenizer under that name (it was
      fine-tuned with it), naming both files; nothing is written then.
  """
  if tokenizer.spm_model_file:
    source, name, flag = tokenizer.spm_model_file, SPM_NAME, "--spm_model_file"
  elif tokenizer.vocab_file:
    source, name, flag = tokenizer.vocab_file, VOCAB_NAME, "--vocab_file"
  else:
    return None
  target = os.path.join(os.fspath(output_dir), name)
  if io.exists(target):
    if io.sha256(target) == io.sha256(source):
      return target
    raise errors.ResumeMismatchError(
        f"{flag}={source} is not the tokenizer {output_dir} was fine-tuned with (kept there as "
        f"{target}): give {flag}={target}, or use a new --output_dir")
  with io.open_binary(source) as f:
    data = f.read()
  with io.AtomicFile(target) as f:
    f.write(data)
  return target
