"""Checkpoints: the original layout both ways, our own, Hugging Face's both ways, and loading
any of them."""

from albert_tf.checkpoints.layout import model_parts, original_variable_map
from albert_tf.checkpoints.original import (LoadReport, load_original_checkpoint,
                                            resolve_checkpoint_path, save_original_checkpoint)
from albert_tf.checkpoints.ours import checkpoint_global_step, is_original_layout, load_checkpoint
from albert_tf.checkpoints.hf import is_hf_checkpoint, load_hf_checkpoint, save_hf_checkpoint
