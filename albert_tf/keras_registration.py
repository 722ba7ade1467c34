"""Makes `import albert_tf` enough for keras.models.load_model to read our `.keras` files.

Keras finds a custom class of a `.keras` file in its registry, which our classes enter when
their module is imported (keras.saving.register_keras_serializable). Importing the models
with albert_tf would load TensorFlow into the data tools, which run without it. Instead, once
Keras is loaded (now, or when anyone imports it), each name of albert_tf.registry gets a stand-in
in Keras's registry (keras.saving.get_custom_objects(), public for this use) that imports the
class's module the first time Keras deserializes one; that import puts the real class in place.
"""

import importlib
import sys

from albert_tf import registry
from albert_tf.import_hooks import ImportHook

PACKAGE = registry.PACKAGE
# Every class we register, layers included (tests/test_keras_native.py checks it).
REGISTERED = tuple(sorted(registry.keras_classes()))


class _StandIn:
  """Keras's registry entry for one of our classes until its module is imported."""

  def __init__(self, name):
    self.name = name
    self.registered_name = f"{PACKAGE}>{name}"

  def from_config(self, config):
    module = registry.keras_classes()[self.name]
    importlib.import_module(module)  # registers the real class over this stand-in
    # The global registry itself: Keras looks names up in a copy made before the import.
    real = sys.modules["keras"].saving.get_custom_objects()[self.registered_name]
    if real is self:
      raise TypeError(f"{module} does not register {self.registered_name}, which "
                      "albert_tf.registry says it does")
    return real.from_config(config)


def _add_stand_ins(keras):
  custom_objects = keras.saving.get_custom_objects()
  for name in REGISTERED:
    custom_objects.setdefault(f"{PACKAGE}>{name}", _StandIn(name))


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
