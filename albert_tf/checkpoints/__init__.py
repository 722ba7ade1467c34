"""Checkpoints in the original layout, both ways."""

from albert_tf.checkpoints.layout import original_variable_map
from albert_tf.checkpoints.original import (LoadReport, load_original_checkpoint,
                                            resolve_checkpoint_path, save_original_checkpoint)
