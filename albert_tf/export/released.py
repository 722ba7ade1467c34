"""A directory laid out like the released ALBERT tarballs: albert_config.json,
model.ckpt-best.* in the original variable layout (no optimizer state), the SentencePiece model."""

import os

from albert_tf.core import io
from albert_tf.checkpoints import (checkpoint_global_step, load_checkpoint,
                                   save_original_checkpoint)
from albert_tf.export.staging import checked_export_dir, write_directory_atomically
from albert_tf.export.tokenizer_arguments import old_tokenizer_arguments
from albert_tf.models import AlbertPretrainer
from albert_tf.tokenization.vocab_check import check_vocab_fits, spm_vocab_size


@old_tokenizer_arguments(lambda config, checkpoint, export_dir, spm_model_file=None,
                         checkpoint_name="model.ckpt-best", config_file=None: None)
def export_released_layout(config, checkpoint, export_dir, tokenizer=None,
                           checkpoint_name="model.ckpt-best", config_file=None):
  """Loads `checkpoint` (either layout) into a pretrainer and writes the released layout.

  The directory is assembled under a temporary name next to it and renamed into place; the
  temporary folders of killed exports to the same directory are removed first (see
  export.staging). `tokenizer` (a settings.TokenizerSettings, or None) gives the SentencePiece
  model shipped beside the checkpoint, as the released tarballs hold it (0.3's spm_model_file
  argument works until 0.4.0: export.tokenizer_arguments). `config_file`, where known, is named
  when that model does not fit the config's vocab_size. Returns the checkpoint prefix written.
  """
  export_dir = checked_export_dir(export_dir)
  spm_model_file = tokenizer.spm_model_file if tokenizer else None
  if spm_model_file:
    check_vocab_fits(spm_vocab_size(spm_model_file), config.vocab_size, spm_model_file,
                     config_file)
  model = AlbertPretrainer(config)
  load_checkpoint(model, checkpoint)

  def write(directory):
    config.to_json_file(os.path.join(directory, "albert_config.json"))
    save_original_checkpoint(model, os.path.join(directory, checkpoint_name),
                             global_step=checkpoint_global_step(checkpoint),
                             update_checkpoint_state=False)
    if spm_model_file:
      vocab = os.path.splitext(spm_model_file)[0] + ".vocab"
      for source in [spm_model_file] + ([vocab] if io.exists(vocab) else []):
        io.copy(source, os.path.join(directory, os.path.basename(source)))
  write_directory_atomically(export_dir, write)
  return os.path.join(export_dir, checkpoint_name)
