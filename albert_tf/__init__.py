"""albert_tf: ALBERT (Lan et al., 2020) in TensorFlow 2 / Keras 3, faithful to the original."""

import os as _os

_os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from albert_tf.checkpoints import load_original_checkpoint, save_original_checkpoint  # noqa: E402
from albert_tf.config import AlbertConfig  # noqa: E402
from albert_tf.models import AlbertModel, AlbertPretrainer  # noqa: E402

__all__ = ["AlbertConfig", "AlbertModel", "AlbertPretrainer", "load_original_checkpoint",
           "save_original_checkpoint"]
