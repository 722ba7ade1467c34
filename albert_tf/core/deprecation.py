"""Names that moved keep working for one release, with a DeprecationWarning naming their new home.

Three kinds of move:
- a module that is gone (`albert_tf.settings`, now albert_tf.core.settings and the tasks'
  settings): MOVED_MODULES below lists it with its new homes, and install() lets Python import
  it under the old name. What it gives is an alias module: each attribute read answers the new
  home's object, with a warning;
- a name that left a module that stays (`albert_tf.models.AlbertClassifier`,
  `AlbertConfig.from_hf_config`): that module declares it, through moved_names() (a module
  `__getattr__`) or moved_function() (a class attribute);
- fields of a settings dataclass that now live in one of its nested settings
  (`PretrainingSettings.spm_model_file`, now `.tokenizer.spm_model_file`): fields_moved_into()
  keeps the old keywords and attributes.

The new homes are named as strings and imported when an old name is used, so that the table
adds no import (TensorFlow included) to `import albert_tf` and no upward import to the layers.
CHANGELOG.md lists every move, and tests/repo/test_public_api.py holds the table to it.
"""

import dataclasses
import functools
import importlib
import importlib.abc
import importlib.machinery
import sys
import warnings

# The release that drops the old names.
REMOVED_IN = "0.4.0"

# Names that left a module that stays: {old dotted name: new dotted name}, filled in as those
# modules declare them (moved_names, moved_function), so that tests and docs can list them.
MOVED_NAMES = {}

# Modules of 0.2.0 that are gone: {old module: its new homes, searched in this order for a name}.
MOVED_MODULES = {
    "albert_tf.cli": ("albert_tf.core.cli",),
    "albert_tf.common_flags": ("albert_tf.training.flags",),
    "albert_tf.config": ("albert_tf.core.config", "albert_tf.checkpoints.hf_config"),
    "albert_tf.errors": ("albert_tf.core.errors",),
    "albert_tf.finetuning.metrics": ("albert_tf.tasks.classifier.metrics",),
    "albert_tf.hardware": ("albert_tf.core.hardware",),
    "albert_tf.import_hooks": ("albert_tf.core.import_hooks",),
    "albert_tf.io": ("albert_tf.core.io",),
    "albert_tf.keras_registration": ("albert_tf.registry",),
    "albert_tf.labels": ("albert_tf.checkpoints.labels",),
    "albert_tf.layers.span_heads": ("albert_tf.tasks.squad.heads",),
    "albert_tf.models.classifier": ("albert_tf.tasks.classifier.model",),
    "albert_tf.models.multiple_choice": ("albert_tf.tasks.race.model",),
    "albert_tf.models.span_labeler": ("albert_tf.tasks.squad.model",),
    "albert_tf.settings": ("albert_tf.core.settings", "albert_tf.tasks.classifier.settings",
                           "albert_tf.tasks.race.settings", "albert_tf.tasks.squad.settings"),
    "albert_tf.squad": ("albert_tf.tasks.squad.data", "albert_tf.tasks.squad.features",
                        "albert_tf.tasks.squad.postprocess"),
    "albert_tf.startup": ("albert_tf.core.startup",),
}


def _importer_stacklevel():
  """warn_moved's stacklevel, called from exec_module, that points at the line importing the old
  module: past the import machinery (importlib.import_module) and this module's frames (an old
  module read as a package attribute). warnings itself skips importlib's bootstrap frames."""
  level, frame = 1, sys._getframe(2)  # exec_module's caller
  while frame is not None:
    filename = frame.f_code.co_filename
    if not ("importlib" in filename and "_bootstrap" in filename):
      level += 1
      if filename not in (__file__, importlib.__file__):
        break
    frame = frame.f_back
  return level


def warn_moved(old, new, stacklevel):
  """Warns that `old` moved to `new`; `stacklevel` counts from warn_moved's caller (1)."""
  warnings.warn(f"{old} is deprecated and will be removed in albert_tf {REMOVED_IN}: use {new}",
                DeprecationWarning, stacklevel=stacklevel + 1)


def _find(name, homes):
  """(home module name, value) of the first home that defines `name`."""
  for home in homes:
    module = importlib.import_module(home)
    if hasattr(module, name):
      return home, getattr(module, name)
  raise AttributeError(f"module {homes[0]!r} (and {', '.join(homes[1:]) or 'no other'}) has no "
                       f"attribute {name!r}")


def _public_names(homes):
  names = set()
  for home in homes:
    module = importlib.import_module(home)
    names.update(getattr(module, "__all__", None) or
                 (n for n in vars(module) if not n.startswith("_")))
  return sorted(names)


def _alias_getattr(old, homes):
  def getattr_(name):
    if name == "__all__":
      return _public_names(homes)
    if name.startswith("__"):
      raise AttributeError(name)
    home, value = _find(name, homes)
    warn_moved(f"{old}.{name}", f"{home}.{name}", stacklevel=2)
    return value  # not kept in the alias, so every use warns (pytest.warns sees each)

  return getattr_


class _MovedModuleFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
  """Imports each module of `MOVED_MODULES` as an alias of its new homes."""

  def find_spec(self, fullname, path=None, target=None):
    del path, target
    if fullname in MOVED_MODULES:
      return importlib.machinery.ModuleSpec(fullname, self)
    return None

  def create_module(self, spec):
    return None  # the default module object

  def exec_module(self, module):
    name = module.__name__
    homes = MOVED_MODULES[name]
    module.__doc__ = f"Deprecated alias of {', '.join(homes)} (removed in {REMOVED_IN})."
    module.__getattr__ = _alias_getattr(name, homes)
    module.__dir__ = lambda: _public_names(homes)
    warn_moved(f"module {name}", " and ".join(homes), stacklevel=_importer_stacklevel())


_FINDER = _MovedModuleFinder()


def install():
  """Lets Python import the modules of MOVED_MODULES under their old names (once a process)."""
  if _FINDER not in sys.meta_path:
    sys.meta_path.append(_FINDER)


def moved_names(module_name, new_home_of):
  """A module `__getattr__` for names that left module `module_name`.

    __getattr__ = deprecation.moved_names(__name__, {
        "AlbertClassifier": "albert_tf.tasks.classifier.model"})

  Args:
    module_name: the module's `__name__`.
    new_home_of: {old name: the module that defines it now (under the same name)}.
  """
  MOVED_NAMES.update({f"{module_name}.{name}": f"{home}.{name}"
                      for name, home in new_home_of.items()})

  def getattr_(name):
    if name in new_home_of:
      home = new_home_of[name]
      warn_moved(f"{module_name}.{name}", f"{home}.{name}", stacklevel=2)
      return getattr(importlib.import_module(home), name)
    raise AttributeError(f"module {module_name!r} has no attribute {name!r}")

  return getattr_


def package_getattr(package, fallback):
  """A package `__getattr__` that also answers the package's moved submodules as attributes
  (`albert_tf.settings` read after `import albert_tf`), importing their alias; `fallback` answers
  every other name."""

  def getattr_(name):
    if f"{package}.{name}" in MOVED_MODULES:
      return importlib.import_module(f"{package}.{name}")
    return fallback(name)

  return getattr_


def moved_function(old, new, bound=False):
  """A class attribute standing for a function that moved: `new` is "module.function".

    class AlbertConfig:
      from_hf_config = deprecation.moved_function(
          "albert_tf.AlbertConfig.from_hf_config", "albert_tf.checkpoints.hf_config.from_hf_config")

  Args:
    old: the old name, for the warning.
    new: the new function's dotted name; it takes what the old one took (the instance first for
      a method).
    bound: True for an old instance method (the instance is passed on as the first argument);
      False for an old classmethod or staticmethod (called without the class).
  """
  MOVED_NAMES[old] = new
  module_name, _, function_name = new.rpartition(".")

  def call(*args, **kwargs):
    warn_moved(old, new, stacklevel=2)
    return getattr(importlib.import_module(module_name), function_name)(*args, **kwargs)

  call.__name__ = old.rpartition(".")[2]
  call.__doc__ = f"Deprecated: use {new} (removed in albert_tf {REMOVED_IN})."
  return call if bound else staticmethod(call)


def fields_moved_into(cls, field, names):
  """Lets the dataclass `cls` still take `names`, fields that moved into its dataclass field
  `field`, as keywords, and read and set them as attributes, with a DeprecationWarning: they
  set and read `<field>.<name>`.

    deprecation.fields_moved_into(PretrainingSettings, "tokenizer", ("spm_model_file",))

  They are neither fields nor InitVars: dataclasses.replace would read the attributes back into
  them and put the old values over a replacing `field`. A name given as None is left out, as its
  0.3 default.

  Returns:
    `cls`, changed in place.
  """
  where = cls.__name__
  make_nested = next(f for f in dataclasses.fields(cls) if f.name == field).default_factory
  nested_class = type(make_nested()).__name__
  init = cls.__init__

  @functools.wraps(init)
  def __init__(self, *args, **kwargs):
    given = {name: kwargs.pop(name) for name in names if name in kwargs}
    moved = {name: value for name, value in given.items() if value is not None}
    if moved:
      listed = ", ".join(f"{name}=..." for name in moved)
      warn_moved(f"{where}({listed})", f"{where}({field}={nested_class}({listed}))",
                 stacklevel=2)
      kwargs[field] = dataclasses.replace(kwargs.get(field) or make_nested(), **moved)
    init(self, *args, **kwargs)

  def attribute(name):
    def read(self):
      warn_moved(f"{where}.{name}", f"{where}.{field}.{name}", stacklevel=2)
      return getattr(getattr(self, field), name)

    def write(self, value):
      warn_moved(f"{where}.{name}", f"{where}.{field}.{name}", stacklevel=2)
      # A new nested object: the old one may be shared with other settings.
      setattr(self, field, dataclasses.replace(getattr(self, field), **{name: value}))

    return property(read, write, doc=f"Deprecated (removed in {REMOVED_IN}): {field}.{name}.")

  cls.__init__ = __init__
  for name in names:
    setattr(cls, name, attribute(name))
  return cls
