"""albert_tf: ALBERT (Lan et al., 2020) in TensorFlow 2 / Keras 3, faithful to the original.

The model names are imported on first use, so that the data tools (tokenization,
create_pretraining_data) run without loading TensorFlow; they are imported with Keras, so that
keras.models.load_model reads our `.keras` files after `import albert_tf`
(registry.register_with_keras); both come from one table, albert_tf.registry. Importing albert_tf
changes nothing else either (the environment included), but for keeping TensorFlow's start-up
notices (its INFO lines, and the cuInit error of a machine without an NVIDIA driver) out of stderr
while TensorFlow is imported, as the binaries do (albert_tf.core.startup.quiet_tensorflow_import): a
script that follows the docs prints its own output only. TF_CPP_MIN_LOG_LEVEL=0 shows them. The
modules 0.3.0 moved import under their old names, with a DeprecationWarning
(albert_tf.core.deprecation).
"""

from albert_tf import registry as _registry
from albert_tf.core import deprecation as _deprecation
from albert_tf.core import lazy as _lazy
from albert_tf.core import startup as _startup

_LAZY = dict(
    _registry.models(),  # AlbertModel, AlbertPretrainer and each task's models (albert_tf.tasks)
    AlbertConfig="albert_tf.core.config",
    AlbertPreprocessor="albert_tf.layers.preprocessor",
    load_checkpoint="albert_tf.checkpoints",
    load_original_checkpoint="albert_tf.checkpoints",
    save_hf_checkpoint="albert_tf.checkpoints",
    save_original_checkpoint="albert_tf.checkpoints",
)

__all__ = sorted(_LAZY)

_registry.register_with_keras()
_deprecation.install()
_startup.quiet_tensorflow_import()


# Moved modules (albert_tf.settings, ...) answer as attributes too, as their alias.
__getattr__ = _deprecation.package_getattr(__name__, _lazy.module_getattr(__name__, _LAZY))
