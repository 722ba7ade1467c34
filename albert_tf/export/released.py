"""A directory laid out like the released ALBERT tarballs: albert_config.json,
model.ckpt-best.* in the original variable layout (no optimizer state), the SentencePiece model."""

import os
import shutil
import tempfile

from albert_tf.checkpoints import (checkpoint_global_step, load_checkpoint,
                                   save_original_checkpoint)
from albert_tf.models import AlbertPretrainer


def export_released_layout(config, checkpoint, export_dir, spm_model_file=None,
                           checkpoint_name="model.ckpt-best"):
  """Loads `checkpoint` (either layout) into a pretrainer and writes the released layout.

  The directory is assembled under a temporary name and renamed into place. Returns the
  checkpoint prefix written.
  """
  export_dir = os.path.abspath(export_dir)
  if os.path.exists(export_dir) and os.listdir(export_dir):
    raise FileExistsError(f"export directory {export_dir} exists and is not empty")
  model = AlbertPretrainer(config)
  load_checkpoint(model, checkpoint)
  parent = os.path.dirname(export_dir)
  os.makedirs(parent, exist_ok=True)
  tmp = tempfile.mkdtemp(prefix=".tmp_export_", dir=parent)
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
