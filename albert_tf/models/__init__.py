"""Keras models composed from albert_tf.layers.

Importing this package registers its models (and, through albert_tf.layers, every layer) with
Keras under the package name "albert_tf". `import albert_tf` does not import it (the data tools
run without TensorFlow), yet is enough for `keras.models.load_model` to rebuild any of our models
from a `.keras` file: albert_tf.registry.register_with_keras gives Keras a stand-in for each of
our classes, which imports the class's module the first time Keras reads one. `import
albert_tf.models`, or any use of `albert_tf.AlbertModel` and the other model names, imports it.
"""

from albert_tf.models.encoder import AlbertModel
from albert_tf.models.losses import (classification_losses, masked_lm_loss, pretraining_losses,
                                     sentence_order_loss)
from albert_tf.models.pretrainer import AlbertPretrainer
from albert_tf.models.task import AlbertTask
from albert_tf.core import deprecation as _deprecation

# The task models moved to their task's folder (albert_tf.tasks.<task>.model).
__getattr__ = _deprecation.moved_names(__name__, {
    "AlbertClassifier": "albert_tf.tasks.classifier.model",
    "AlbertMultipleChoice": "albert_tf.tasks.race.model",
    "AlbertSpanLabeler": "albert_tf.tasks.squad.model",
    "AlbertSquadV2": "albert_tf.tasks.squad.model",
})
