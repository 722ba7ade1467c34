"""A directory laid out like the released ALBERT tarballs: albert_config.json,
model.ckpt-best.* in the original variable layout (no optimizer state), the SentencePiece model."""

import os
import re

from albert_tf import io
from albert_tf.checkpoints import (checkpoint_global_step, load_checkpoint,
                                   save_original_checkpoint)
from albert_tf.export.staging import remove_stale_staging_dirs, staging_dir
from albert_tf.models import AlbertPretrainer
from albert_tf.tokenization.vocab_check import check_vocab_fits, spm_vocab_size


def export_released_layout(config, checkpoint, export_dir, spm_model_file=None,
                           checkpoint_name="model.ckpt-best", config_file=None):
  """Loads `checkpoint` (either layout) into a pretrainer and writes the released layout.

  The directory is assembled under a temporary name next to it and renamed into place; the
  temporary folders of killed exports to the same directory are removed first (see
  export.staging). `config_file`, where known, is named when the SentencePiece model does not
  fit the config's vocab_size. Returns the checkpoint prefix written.
  """
  export_dir = io.abspath(export_dir)
  if io.exists(export_dir) and io.listdir(export_dir):
    raise FileExistsError(f"export directory {export_dir} exists and is not empty")
  if spm_model_file:
    check_vocab_fits(spm_vocab_size(spm_model_file), config.vocab_size, spm_model_file,
                     config_file)
  model = AlbertPretrainer(config)
  load_checkpoint(model, checkpoint)
  parent, name = io.split(export_dir)
  io.makedirs(parent)
  remove_stale_staging_dirs(parent, re.escape(name))
  tmp = staging_dir(parent, name)
  io.rmtree(tmp, ignore_errors=True)
  io.makedirs(tmp)
  try:
    config.to_json_file(os.path.join(tmp, "albert_config.json"))
    save_original_checkpoint(model, os.path.join(tmp, checkpoint_name),
                             global_step=checkpoint_global_step(checkpoint),
                             update_checkpoint_state=False)
    if spm_model_file:
      vocab = os.path.splitext(spm_model_file)[0] + ".vocab"
      for source in [spm_model_file] + ([vocab] if io.exists(vocab) else []):
        io.copy(source, os.path.join(tmp, os.path.basename(source)))
    if io.exists(export_dir):
      io.rmdir(export_dir)
    io.rename(tmp, export_dir)
  except BaseException:
    io.rmtree(tmp, ignore_errors=True)
    raise
  return os.path.join(export_dir, checkpoint_name)
