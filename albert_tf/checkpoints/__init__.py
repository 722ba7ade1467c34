"""Checkpoints: the original layout both ways, our own, Hugging Face's both ways, keras-hub
presets (read), and loading any of them (formats: which format a checkpoint is in).

The names below are imported on first use, as albert_tf's own are: the package also holds
modules without TensorFlow (labels: the label files beside a checkpoint, read by the own-data
readers and the binaries' flag checks), which importing the package must not load.
"""

from albert_tf.core import lazy as _lazy

_LAZY = {
    "albert_tf.checkpoints.layout": ("model_parts", "original_variable_map"),
    "albert_tf.checkpoints.original": ("LoadReport", "load_original_checkpoint",
                                       "resolve_checkpoint_path", "save_original_checkpoint"),
    "albert_tf.checkpoints.ours": ("is_original_layout",),
    "albert_tf.checkpoints.hf": ("is_hf_checkpoint", "load_hf_checkpoint", "save_hf_checkpoint"),
    "albert_tf.checkpoints.keras_hub": ("is_keras_hub_preset", "load_keras_hub_preset"),
    "albert_tf.checkpoints.formats": ("checkpoint_global_step", "load_checkpoint", "model_config",
                                      "spm_model_file"),
    "albert_tf.checkpoints.opened": ("OpenedCheckpoint", "open_checkpoint"),
}
_MODULE_OF = {name: module for module, names in _LAZY.items() for name in names}

__all__ = sorted(_MODULE_OF)


__getattr__ = _lazy.module_getattr(__name__, _MODULE_OF)
