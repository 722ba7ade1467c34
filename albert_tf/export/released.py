"""A directory laid out like the released ALBERT tarballs: albert_config.json,
model.ckpt-best.* in the original variable layout (no optimizer state), the SentencePiece model."""

import os
import re
import shutil

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
  export_dir = os.path.abspath(export_dir)
  if os.path.exists(export_dir) and os.listdir(export_dir):
    raise FileExistsError(f"export directory {export_dir} exists and is not empty")
  if spm_model_file:
    check_vocab_fits(spm_vocab_size(spm_model_file), config.vocab_size, spm_model_file,
                     config_file)
  model = AlbertPretrainer(config)
  load_checkpoint(model, checkpoint)
  parent, name = os.path.split(export_dir)
  os.makedirs(parent, exist_ok=True)
  remove_stale_staging_dirs(parent, re.escape(name))
  tmp = staging_dir(parent, name)
  shutil.rmtree(tmp, ignore_errors=True)
  os.makedirs(tmp)
  try:
    config.to_json_file(os.path.join(tmp, "albert_config.json"))
    save_original_checkpoint(model, os.path.join(tmp, checkpoint_name),
                             global_step=checkpoint_global_step(checkpoint),
                             update_checkpoint_state=False)
    if spm_model_file:
      shutil.copy(spm_model_file, tmp)
      vocab = os.path.splitext(spm_model_file)[0] + ".vocab"
      if os.path.exists(vocab):
        shutil.copy(vocab, tmp)
    if os.path.exists(export_dir):
      os.rmdir(export_dir)
    os.replace(tmp, export_dir)
  except BaseException:
    shutil.rmtree(tmp, ignore_errors=True)
    raise
  return os.path.join(export_dir, checkpoint_name)
