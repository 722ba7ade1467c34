"""The public API as it stands: what tests/repo/test_public_api.py holds against the stored list.

The public surface is the names `import albert_tf` gives and the documented modules (those
named in docs/api.md and imported by the docs' code blocks): each one's public names, with the
signature of each function, class and public method defined in albert_tf. A change to any of
them is a change users' code sees, so the stored list (tests/testdata/public_api.json) changes
with it, deliberately, and CHANGELOG.md says so (a moved name keeps a deprecated alias for one
release: albert_tf.core.deprecation).

After a deliberate change, write the list again and review the diff:

  python3 tests/public_api.py
"""

import importlib
import inspect
import json
import os
import sys

STORED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "testdata", "public_api.json")

# The documented modules. tests/repo/test_public_api.py checks that the docs name no other.
MODULES = (
    "albert_tf",
    "albert_tf.checkpoints",
    "albert_tf.checkpoints.formats",
    "albert_tf.checkpoints.hf",
    "albert_tf.checkpoints.hf_config",
    "albert_tf.checkpoints.opened",
    "albert_tf.checkpoints.original",
    "albert_tf.core.config",
    "albert_tf.core.errors",
    "albert_tf.core.hardware",
    "albert_tf.core.settings",
    "albert_tf.models",
    "albert_tf.models.encoder",
    "albert_tf.models.pretrainer",
    "albert_tf.tasks.classifier.job",
    "albert_tf.tasks.classifier.model",
    "albert_tf.tasks.classifier.settings",
    "albert_tf.tasks.ner.job",
    "albert_tf.tasks.ner.model",
    "albert_tf.tasks.ner.settings",
    "albert_tf.tasks.race.model",
    "albert_tf.tasks.race.settings",
    "albert_tf.tasks.squad.model",
    "albert_tf.tasks.squad.settings",
    "albert_tf.tokenization",
)


def _signature(value):
  try:
    return str(inspect.signature(value))
  except (TypeError, ValueError):
    return "(...)"


def _ours(value):
  return (getattr(value, "__module__", "") or "").startswith("albert_tf")


def _class_surface(cls):
  """{member: signature} of a class's public methods and properties defined in albert_tf (in
  the class or an albert_tf base; Keras' own members are Keras's API)."""
  members = {"__init__": _signature(cls)}
  for base in reversed(cls.__mro__):
    if not _ours(base):
      continue
    for name, value in vars(base).items():
      if name.startswith("_"):
        continue
      if isinstance(value, property):
        members[name] = "property"
      elif isinstance(value, (staticmethod, classmethod)):
        members[name] = _signature(value.__func__)
      elif callable(value):
        members[name] = _signature(value)
  return dict(sorted(members.items()))


def _value_surface(value):
  home = f"{value.__module__}.{value.__qualname__}"
  if inspect.isclass(value):
    return {"defined_in": home, "members": _class_surface(value)}
  return {"defined_in": home, "signature": _signature(value)}


def module_surface(name):
  """{public name: what it is} for module `name`: its `__all__`, else the functions and classes
  it defines (a package: those of albert_tf it imports)."""
  module = importlib.import_module(name)
  names = getattr(module, "__all__", None)
  if names is None:  # a package gives what it imports; a module what it defines
    names = [n for n, v in vars(module).items() if not n.startswith("_")
             and (inspect.isclass(v) or inspect.isfunction(v))
             and (v.__module__ == name or hasattr(module, "__path__") and _ours(v))]
  surface = {}
  for public in sorted(names):
    value = getattr(module, public)
    if (inspect.isclass(value) or inspect.isfunction(value)) and _ours(value):
      surface[public] = _value_surface(value)
    else:
      surface[public] = type(value).__name__
  return surface


def surface():
  return {name: module_surface(name) for name in MODULES}


if __name__ == "__main__":
  sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
  with open(STORED, "w") as f:
    json.dump(surface(), f, indent=1, sort_keys=True)
    f.write("\n")
  print(f"wrote {STORED}")
