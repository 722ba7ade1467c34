"""Keras models composed from albert_tf.layers.

Importing this package registers every model (and, through albert_tf.layers, every layer) with
Keras under the package name "albert_tf", so that `keras.models.load_model` can rebuild them
from a `.keras` file. `import albert_tf` alone does not import it (the data tools run without
TensorFlow); `import albert_tf.models`, or any use of `albert_tf.AlbertModel` and the other model
names, does.
"""

from albert_tf.models.classifier import AlbertClassifier
from albert_tf.models.encoder import AlbertModel
from albert_tf.models.losses import (classification_losses, masked_lm_loss, pretraining_losses,
                                     sentence_order_loss)
from albert_tf.models.multiple_choice import AlbertMultipleChoice
from albert_tf.models.pretrainer import AlbertPretrainer
from albert_tf.models.span_labeler import AlbertSpanLabeler, AlbertSquadV2
from albert_tf.models.task import AlbertTask


def __getattr__(name):
  # The NER task's model lives in its task folder, which imports this package's modules: taken
  # on first use, so that either can be imported first.
  if name == "AlbertTokenClassifier":
    # pylint: disable-next=import-outside-toplevel
    from albert_tf.tasks.ner.model import AlbertTokenClassifier
    return AlbertTokenClassifier
  raise AttributeError(f"module 'albert_tf.models' has no attribute {name!r}")
