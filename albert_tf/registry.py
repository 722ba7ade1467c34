"""The one table of albert_tf's Keras classes: class name -> the module that defines and
registers it (keras.saving.register_keras_serializable(package="albert_tf")).

The core classes are listed here; each task package declares its own in its `__init__.py`
(MODELS, and optionally LAYERS: see albert_tf.tasks), found with pkgutil so that a new task needs
no line outside its folder. Nothing here imports TensorFlow: albert_tf's lazy model names
(albert_tf.__init__) and Keras's stand-ins (keras_registration) are derived from this table on
`import albert_tf`.
"""

import functools
import importlib
import pkgutil

PACKAGE = "albert_tf"  # the Keras package of every registered name; `.keras` files hold it
CORE_MODELS = {"AlbertModel": "albert_tf.models.encoder",
               "AlbertPretrainer": "albert_tf.models.pretrainer"}
CORE_LAYERS = {name: "albert_tf.layers" for name in (
    "AlbertAttention", "AlbertEmbeddings", "AttentionFFNBlock", "Dense", "MaskedLMHead",
    "PooledLogits", "Pooler", "SharedTransformer", "SpanLogits", "SquadV2Head")}
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


def keras_classes():
  """{class name: module} of every class registered under PACKAGE, layers included."""
  models_, layers = _tables()
  return {**models_, **layers}

