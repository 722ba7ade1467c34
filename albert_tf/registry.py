"""The one table of albert_tf's Keras classes: class name -> the module that defines and
registers it (keras.saving.register_keras_serializable(package="albert_tf")).

The core classes are listed here; each task package declares its own in its `__init__.py`
(MODELS, and optionally LAYERS and HF_HEADS: see albert_tf.tasks), found with pkgutil so that a
new task needs no line outside its folder. Nothing here imports TensorFlow: albert_tf's lazy model
names (albert_tf.__init__) and Keras's stand-ins (register_with_keras) are derived from this table
on `import albert_tf`.

Keras's stand-ins make `import albert_tf` enough for keras.models.load_model to read our `.keras`
files. Keras finds a custom class of a `.keras` file in its registry, which our classes enter when
their module is imported (keras.saving.register_keras_serializable). Importing the models with
albert_tf would load TensorFlow into the data tools, which run without it. Instead, once Keras is
loaded (now, or when anyone imports it), each name of this table gets a stand-in in Keras's
registry (keras.saving.get_custom_objects(), public for this use) that imports the class's module
the first time Keras deserializes one; that import puts the real class in place.
"""

import functools
import importlib
import pkgutil
import sys

from albert_tf.core.import_hooks import ImportHook

PACKAGE = "albert_tf"  # the Keras package of every registered name; `.keras` files hold it
CORE_MODELS = {"AlbertModel": "albert_tf.models.encoder",
               "AlbertPretrainer": "albert_tf.models.pretrainer"}
CORE_LAYERS = {name: "albert_tf.layers" for name in (
    "AlbertAttention", "AlbertEmbeddings", "AttentionFFNBlock", "Dense", "LayerNorm",
    "MaskedLMHead", "PooledLogits", "Pooler", "SharedTransformer")}
# Not imported by albert_tf.layers: it loads tensorflow-text, which the model layers do not need.
CORE_LAYERS["AlbertPreprocessor"] = "albert_tf.layers.preprocessor"


def task_packages():
  """The names of the task packages under albert_tf.tasks, sorted."""
  tasks = importlib.import_module("albert_tf.tasks")
  return sorted(info.name for info in pkgutil.iter_modules(tasks.__path__, tasks.__name__ + ".")
                if info.ispkg)


@functools.cache
def _tables():
  models, layers = dict(CORE_MODELS), dict(CORE_LAYERS)
  for package_name in task_packages():
    package = importlib.import_module(package_name)
    for table, declared in ((models, getattr(package, "MODELS", {})),
                            (layers, getattr(package, "LAYERS", {}))):
      for name, module in declared.items():
        if name in models or name in layers:
          # Keras keeps one class per registered name: a second would shadow the first.
          raise ValueError(f"{package_name} declares {name}, which is already declared")
        table[name] = module
  return models, layers


def models():
  """{model class name: module}: the core models and every task's MODELS."""
  return dict(_tables()[0])


def hf_heads():
  """{model class name: {field: value}}: the Hugging Face head of each task model, as its task
  package declares it (HF_HEADS, plain data: albert_tf.checkpoints.hf_heads.HfHead's fields;
  that module holds the core models' own and reads these).

  Raises:
    ValueError: a class declared twice, or one its package does not declare in MODELS.
  """
  heads = {}
  for package_name in task_packages():
    package = importlib.import_module(package_name)
    for name, fields in getattr(package, "HF_HEADS", {}).items():
      if name in heads or name not in getattr(package, "MODELS", {}):
        raise ValueError(f"{package_name} declares the Hugging Face head of {name}, which is "
                         "declared twice or is not among its MODELS: one HF_HEADS entry per "
                         "model of the package")
      heads[name] = dict(fields)
  return heads


def keras_classes():
  """{class name: module} of every class registered under PACKAGE, layers included."""
  models_, layers = _tables()
  return {**models_, **layers}


# Every class we register, layers included (tests/checkpoints/test_keras_native.py checks it).
REGISTERED = tuple(sorted(keras_classes()))


class _StandIn:
  """Keras's registry entry for one of our classes until its module is imported."""

  def __init__(self, name):
    self.name = name
    self.registered_name = f"{PACKAGE}>{name}"

  def from_config(self, config):
    module = keras_classes()[self.name]
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
