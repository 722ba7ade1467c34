"""Checkpoints: the original layout both ways, our own, Hugging Face's both ways, keras-hub
presets (read), and loading any of them."""

from albert_tf.checkpoints.layout import model_parts, original_variable_map
from albert_tf.checkpoints.original import (LoadReport, load_original_checkpoint,
                                            resolve_checkpoint_path, save_original_checkpoint)
from albert_tf.checkpoints.ours import checkpoint_global_step, is_original_layout, load_checkpoint
from albert_tf.checkpoints.hf import is_hf_checkpoint, load_hf_checkpoint, save_hf_checkpoint
from albert_tf.checkpoints.keras_hub import (is_keras_hub_preset, load_keras_hub_preset,
                                             model_config, spm_model_file)
