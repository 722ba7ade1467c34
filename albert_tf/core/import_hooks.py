"""Running our code around the import of another package (TensorFlow's start-up notices, Keras's
registry), whoever imports it and whenever. Imports nothing heavy itself.

A hook is a meta-path finder for one package name: it finds the package as the other finders do
and wraps its loader, whose `around_import(module, run)` runs the real import (`run()`). It stays
installed until an import through it succeeds, so an import that fails (TensorFlow tries Keras
mid-way through its own import, and goes on without it) is followed by another.
"""

import importlib.abc
import sys


class ImportHook(importlib.abc.MetaPathFinder):
  """Subclasses give around_import(module, run): run() executes the package's own loader."""

  def __init__(self, package):
    self.package = package

  def around_import(self, module, run):
    raise NotImplementedError

  def install(self):
    """Installs this hook unless one of its class is installed; returns it."""
    if not any(type(finder) is type(self) for finder in sys.meta_path):
      sys.meta_path.insert(0, self)
    return self

  def find_spec(self, fullname, path=None, target=None):
    # Asked again while it asks the other finders (another hook for the same package asks it):
    # it answers only once, so that each hook wraps the real loader once.
    if fullname != self.package or getattr(self, "_finding", False):
      return None
    self._finding = True
    try:
      for finder in sys.meta_path:
        if finder is self or not hasattr(finder, "find_spec"):
          continue
        spec = finder.find_spec(fullname, path, target)
        if spec is not None:
          if spec.loader is not None:
            spec.loader = _HookedLoader(spec.loader, self)
          return spec
      return None
    finally:
      self._finding = False


class _HookedLoader(importlib.abc.Loader):
  """The package's own loader, run inside its hook's around_import."""

  def __init__(self, loader, hook):
    self._loader = loader
    self._hook = hook

  def create_module(self, spec):
    return self._loader.create_module(spec)

  def exec_module(self, module):
    def run():
      try:
        self._loader.exec_module(module)
      finally:
        # The package's own loader, under however many hooks wrap it (two for tensorflow: the
        # binaries' quiet start-up and albert_tf's own, startup.quiet_tensorflow_import).
        loader = self._loader
        while isinstance(loader, _HookedLoader):
          loader = loader._loader
        module.__loader__ = module.__spec__.loader = loader
    self._hook.around_import(module, run)
    if self._hook in sys.meta_path:
      sys.meta_path.remove(self._hook)

  def __getattr__(self, name):
    # get_data, is_package, get_resource_reader...: the real loader's.
    return getattr(self._loader, name)
