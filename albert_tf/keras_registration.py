"""Makes `import albert_tf` enough for keras.models.load_model to read our `.keras` files.

Keras finds a custom class of a `.keras` file in its registry, which our classes enter when
albert_tf.models is imported (keras.saving.register_keras_serializable). Importing the models
with albert_tf would load TensorFlow into the data tools, which run without it. Instead, once
Keras is loaded (now, or when anyone imports it), each of our registered names gets a stand-in in
Keras's registry (keras.saving.get_custom_objects(), public for this use) that imports the models
the first time Keras deserializes one of them; their import then puts the real classes in place.
"""

import importlib
import importlib.abc
import sys

_MODELS = "albert_tf.models"
PACKAGE = "albert_tf"
# Every class albert_tf.models registers, layers included (tests/test_keras_native.py checks it).
REGISTERED = ("AlbertAttention", "AlbertClassifier", "AlbertEmbeddings", "AlbertModel",
              "AlbertMultipleChoice", "AlbertPretrainer", "AlbertSpanLabeler", "AlbertSquadV2",
              "AttentionFFNBlock", "Dense", "MaskedLMHead", "PooledLogits", "Pooler",
              "SharedTransformer", "SpanLogits", "SquadV2Head")


class _StandIn:
  """Keras's registry entry for one of our classes until albert_tf.models is imported."""

  def __init__(self, registered_name):
    self.registered_name = registered_name

  def from_config(self, config):
    importlib.import_module(_MODELS)  # registers the real class over this stand-in
    # The global registry itself: Keras looks names up in a copy made before the import.
    real = sys.modules["keras"].saving.get_custom_objects()[self.registered_name]
    return real.from_config(config)


def _add_stand_ins(keras):
  registry = keras.saving.get_custom_objects()
  for name in REGISTERED:
    registry.setdefault(f"{PACKAGE}>{name}", _StandIn(f"{PACKAGE}>{name}"))


class _AfterKeras(importlib.abc.Loader):
  """Runs Keras's own loader, then adds the stand-ins (no TensorFlow import: Keras may be loading
  as part of TensorFlow's own import)."""

  def __init__(self, loader, finder):
    self._loader = loader
    self._finder = finder

  def create_module(self, spec):
    return self._loader.create_module(spec)

  def exec_module(self, module):
    try:
      self._loader.exec_module(module)
    finally:
      module.__loader__ = module.__spec__.loader = self._loader
    _add_stand_ins(module)
    # Only now: an import of Keras that fails (TensorFlow's import tries it mid-way, and goes on
    # without it) is followed by another.
    if self._finder in sys.meta_path:
      sys.meta_path.remove(self._finder)

  def __getattr__(self, name):
    return getattr(self._loader, name)


class _KerasFinder(importlib.abc.MetaPathFinder):
  """Finds `keras` as the other finders do, wrapping its loader, until Keras has loaded."""

  def find_spec(self, fullname, path=None, target=None):
    if fullname != "keras":
      return None
    for finder in sys.meta_path:
      if finder is self or not hasattr(finder, "find_spec"):
        continue
      spec = finder.find_spec(fullname, path, target)
      if spec is not None:
        if spec.loader is not None:
          spec.loader = _AfterKeras(spec.loader, self)
        return spec
    return None


def register_with_keras():
  """Puts the stand-ins in Keras's registry now if Keras is loaded, else once it is."""
  if "keras" in sys.modules:
    _add_stand_ins(sys.modules["keras"])
  elif not any(isinstance(finder, _KerasFinder) for finder in sys.meta_path):
    sys.meta_path.insert(0, _KerasFinder())
