"""Names a package imports on first use (PEP 562), so that importing the package loads nothing
heavy: albert_tf's model names, albert_tf.checkpoints' loaders. No TensorFlow here."""

import importlib
import sys


def module_getattr(package: str, module_of: dict):
  """A module-level `__getattr__` for `package` that imports `module_of[name]` the first time
  `name` is read and keeps the value in the package's namespace.

    __getattr__ = lazy.module_getattr(__name__, {"AlbertConfig": "albert_tf.core.config"})

  Args:
    package: the package's `__name__`.
    module_of: {name: the module that defines it}.
  """

  def getattr_(name):
    if name in module_of:
      value = getattr(importlib.import_module(module_of[name]), name)
      setattr(sys.modules[package], name, value)
      return value
    raise AttributeError(f"module {package!r} has no attribute {name!r}")

  return getattr_
