"""Makes `import albert_tf` enough for keras.models.load_model to read our `.keras` files.

Keras finds a custom class of a `.keras` file in its registry, which our classes enter when
albert_tf.models is imported (keras.saving.register_keras_serializable). Importing the models
with albert_tf would load TensorFlow into the data tools, which run without it. Instead, once
Keras is loaded (now, or when anyone imports it), each of our registered names gets a stand-in in
Keras's registry (keras.saving.get_custom_objects(), public for this use) that imports the models
the first time Keras deserializes one of them; their import then puts the real classes in place.
"""

import importlib
import sys

from albert_tf.import_hooks import ImportHook
from albert_tf.tasks import ner

_MODELS = "albert_tf.models"
# Task models registered by their task folders (albert_tf.tasks.<task>.MODELS).
_TASK_MODELS = dict(ner.MODELS)
PACKAGE = "albert_tf"
# Every class albert_tf.models registers, layers included (tests/test_keras_native.py checks it).
REGISTERED = ("AlbertAttention", "AlbertClassifier", "AlbertEmbeddings", "AlbertModel",
              "AlbertMultipleChoice", "AlbertPretrainer", "AlbertSpanLabeler", "AlbertSquadV2",
              "AlbertTokenClassifier",
              "AttentionFFNBlock", "Dense", "MaskedLMHead", "PooledLogits", "Pooler",
              "SharedTransformer", "SpanLogits", "SquadV2Head")


class _StandIn:
  """Keras's registry entry for one of our classes until albert_tf.models is imported."""

  def __init__(self, registered_name):
    self.registered_name = registered_name

  def from_config(self, config):
    # Registers the real class over this stand-in (a task's model: its task module).
    name = self.registered_name.split(">", 1)[1]
    importlib.import_module(_TASK_MODELS.get(name, _MODELS))
    # The global registry itself: Keras looks names up in a copy made before the import.
    real = sys.modules["keras"].saving.get_custom_objects()[self.registered_name]
    return real.from_config(config)


def _add_stand_ins(keras):
  registry = keras.saving.get_custom_objects()
  for name in REGISTERED:
    registry.setdefault(f"{PACKAGE}>{name}", _StandIn(f"{PACKAGE}>{name}"))


class _AfterKeras(ImportHook):
  """Adds the stand-ins once Keras has loaded (no TensorFlow import here: Keras may be loading
  as part of TensorFlow's own import)."""

  def __init__(self):
    super().__init__("keras")

  def around_import(self, module, run):
    run()
    _add_stand_ins(module)


def register_with_keras():
  """Puts the stand-ins in Keras's registry now if Keras is loaded, else once it is."""
  if "keras" in sys.modules:
    _add_stand_ins(sys.modules["keras"])
  else:
    _AfterKeras().install()
