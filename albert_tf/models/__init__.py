"""Keras models composed from albert_tf.layers.

Importing this package registers every model (and, through albert_tf.layers, every layer) with
Keras under the package name "albert_tf", so that `keras.models.load_model` can rebuild them
from a `.keras` file. `import albert_tf` alone does not import it (the data tools run without
TensorFlow); `import albert_tf.models`, or any use of `albert_tf.AlbertModel` and the other model
names, does.
"""

from albert_tf.models.encoder import AlbertModel
from albert_tf.models.losses import (classification_losses, masked_lm_loss, pretraining_losses,
                                     sentence_order_loss)
from albert_tf.models.pretrainer import AlbertPretrainer
from albert_tf.models.task import AlbertTask
