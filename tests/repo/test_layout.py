"""The package's layout, as docs/layout.md draws it: binaries on top of a library whose layers
import only downward, no import circle, small modules. Read from the source (ast): nothing is
imported or run."""

import ast
import glob
import os

from helpers import REPO_ROOT

PACKAGE_DIR = os.path.join(REPO_ROOT, "albert_tf")
# Lowest first: a module may import its own layer and those before it. The top-level modules
# (the binaries, registry.py, __init__.py) stand on all of them.
LAYERS = ("core", "tokenization", "data", "layers", "models", "checkpoints", "optimization",
          "training", "export", "finetuning", "tasks")
TOP = len(LAYERS)
# The one import allowed upward: the plug-in table, through which the layers below find the
# tasks' classes without naming them.
REGISTRY = "albert_tf.registry"
MAX_TOP_LEVEL_MODULES = 16
MAX_MODULE_LINES = 450
# A task binary (albert_tf/run_<task>.py) is its docstring (its --help text) and a few lines:
# the task's folder defines its flags and holds its main()'s body (tasks/<task>/flags.py).
MAX_BINARY_CODE_LINES = 25
# Flags only tasks define that keep a row in core/bounds.py: the fine-tuning schedule (steps, or
# SQuAD's epochs and warmup proportion), which every task's TrainSettings come from.
SHARED_TASK_FLAGS = {"train_step", "warmup_step", "num_train_epochs", "warmup_proportion"}
# Tasks whose settings class is core's, bounds included (core/bounds.py): pretraining's
# PretrainingSettings (albert_tf.core.settings), which the training layer's memory estimate reads
# too. Their flags count as defined outside the tasks.
TASKS_OF_CORE_SETTINGS = ("albert_tf.tasks.pretraining",)


def _modules():
  """{module name: path} of every module of albert_tf (a package under its own name)."""
  modules = {}
  for path in glob.glob(os.path.join(PACKAGE_DIR, "**", "*.py"), recursive=True):
    parts = os.path.relpath(path, REPO_ROOT)[:-3].split(os.sep)
    if parts[-1] == "__init__":
      parts = parts[:-1]
    modules[".".join(parts)] = path
  return modules


def _imports(name, path, modules):
  """The albert_tf modules that module `name` imports (a name imported from a package counts as
  its module when it is one, else as the package)."""
  package = name if path.endswith("__init__.py") else name.rpartition(".")[0]
  found = set()
  for node in ast.walk(ast.parse(open(path).read(), path)):
    if isinstance(node, ast.Import):
      found.update(alias.name for alias in node.names)
    elif isinstance(node, ast.ImportFrom):
      base = node.module or ""
      if node.level:
        anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
        base = ".".join(anchor + ([base] if base else []))
      for alias in node.names:
        found.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base)
  return {m for m in found if m in modules and m != name}


def _graph():
  modules = _modules()
  return {name: _imports(name, path, modules) for name, path in modules.items()}


def _layer(module):
  parts = module.split(".")
  return LAYERS.index(parts[1]) if len(parts) > 1 and parts[1] in LAYERS else TOP


def test_the_top_level_holds_the_binaries_and_few_other_modules():
  top = sorted(os.path.basename(p) for p in glob.glob(os.path.join(PACKAGE_DIR, "*.py")))
  assert len(top) <= MAX_TOP_LEVEL_MODULES, top
  folders = {d for d in os.listdir(PACKAGE_DIR)
             if os.path.isfile(os.path.join(PACKAGE_DIR, d, "__init__.py"))}
  assert folders == set(LAYERS), "a package of albert_tf/ missing from LAYERS (or gone)"


def test_imports_point_down_but_the_registry_lookup():
  upward = [f"{module} -> {target}" for module, targets in sorted(_graph().items())
            for target in sorted(targets)
            if target != REGISTRY and _layer(target) > _layer(module)]
  assert not upward, "\n".join(upward)


def test_no_import_circle():
  graph = _graph()
  # Tarjan's strongly connected components: any with two or more modules is a circle.
  index, low, stack, on_stack, circles = {}, {}, [], set(), []

  def visit(node):
    index[node] = low[node] = len(index)
    stack.append(node)
    on_stack.add(node)
    for target in graph[node]:
      if target not in index:
        visit(target)
        low[node] = min(low[node], low[target])
      elif target in on_stack:
        low[node] = min(low[node], index[target])
    if low[node] == index[node]:
      component = []
      while not component or component[-1] != node:
        component.append(stack.pop())
        on_stack.discard(component[-1])
      if len(component) > 1:
        circles.append(sorted(component))

  for node in sorted(graph):
    if node not in index:
      visit(node)
  assert not circles, circles


def test_no_module_is_long():
  long_ones = {}
  for path in _modules().values():
    with open(path) as f:
      lines = sum(1 for _ in f)
    if lines > MAX_MODULE_LINES:
      long_ones[os.path.relpath(path, REPO_ROOT)] = lines
  assert not long_ones, long_ones


def test_the_checks_see_what_they_check():
  # The resolver finds both import forms, and the layers rank as drawn.
  graph = _graph()
  assert "albert_tf.core.io" in graph["albert_tf.core.config"]
  assert "albert_tf.registry" in graph["albert_tf"]
  assert _layer("albert_tf.core.io") < _layer("albert_tf.models.encoder") < _layer(
      "albert_tf.tasks.ner.model") < _layer("albert_tf.run_ner")


def _task_binaries():
  return sorted(glob.glob(os.path.join(PACKAGE_DIR, "run_*.py")))


def _defined_flags(path):
  """The names of the flags that the module at path defines (flags.DEFINE_*("name", ...))."""
  names = set()
  for node in ast.walk(ast.parse(open(path).read(), path)):
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
        and node.func.attr.startswith("DEFINE") and node.args
        and isinstance(node.args[0], ast.Constant)):
      names.add(node.args[0].value)
  return names


def test_a_task_binary_defines_no_flag_and_is_a_few_lines():
  binaries = _task_binaries()
  assert {os.path.basename(p) for p in binaries} >= {
      "run_classifier.py", "run_race.py", "run_ner.py", "run_squad_v1.py", "run_squad_v2.py",
      "run_pretraining.py"}
  defining = {os.path.basename(p): sorted(_defined_flags(p)) for p in binaries
              if _defined_flags(p)}
  assert not defining, f"define a task's flags in albert_tf/tasks/<task>/flags.py: {defining}"
  long_ones = {}
  for path in binaries:
    with open(path) as f:
      source = f.read()
    body = ast.parse(source).body
    docstring_end = body[0].end_lineno if body and isinstance(body[0], ast.Expr) else 0
    code = [l for l in source.splitlines()[docstring_end:] if l.strip()]
    if len(code) > MAX_BINARY_CODE_LINES:
      long_ones[os.path.basename(path)] = len(code)
  assert not long_ones, f"move the task's main() body to albert_tf/tasks/<task>/: {long_ones}"


def _core_bound_names():
  """The flag names that core/bounds.py's FLAG_BOUNDS holds: the identifiers among the string
  constants of its assignment (the rows' keys; the reasons are sentences)."""
  path = os.path.join(PACKAGE_DIR, "core", "bounds.py")
  for node in ast.parse(open(path).read(), path).body:
    if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "FLAG_BOUNDS"
                                            for t in node.targets):
      return {n.value for n in ast.walk(node.value)
              if isinstance(n, ast.Constant) and isinstance(n.value, str)
              and n.value.isidentifier()}
  raise AssertionError("core/bounds.py has no FLAG_BOUNDS")


def test_a_task_owns_its_flags_bounds():
  tasks, elsewhere = set(), set()
  for name, path in _modules().items():
    in_a_task = name.startswith("albert_tf.tasks.") and not name.startswith(
        tuple(f"{task}." for task in TASKS_OF_CORE_SETTINGS))
    (tasks if in_a_task else elsewhere).update(_defined_flags(path))
  task_only = tasks - elsewhere - SHARED_TASK_FLAGS
  assert {"doc_stride", "dropout_prob", "classifier_dropout", "max_qa_length"} <= task_only
  in_core = sorted(task_only & _core_bound_names())
  assert not in_core, ("bound these task flags in their task's settings.py FLAG_BOUNDS "
                       f"(core.bounds.register), not in core/bounds.py: {in_core}")
  assert {"train_batch_size", "albert_dropout", "train_step"} <= _core_bound_names()


# ---- the tests ----------------------------------------------------------------------------------
# Folders of tests/ that mirror no package: the binaries and documented commands run whole, the
# checkout's own checks, the tools' tests, the data.
TEST_FOLDERS_OF_NO_PACKAGE = {"end_to_end", "repo", "tools", "testdata", "__pycache__"}


def _test_files():
  tests = os.path.join(REPO_ROOT, "tests")
  return sorted(os.path.relpath(p, tests)
                for p in glob.glob(os.path.join(tests, "**", "test_*.py"), recursive=True))


def test_tests_are_shaped_like_the_package():
  """Each test file sits in a folder named after the package it checks (tests/training/ for
  albert_tf/training/, tests/tasks/<task>/ for a task), or in end_to_end/, repo/ or tools/; none
  at the top, where only the shared fixtures and helpers live. Basenames are unique: pytest
  imports a test file by its basename."""
  files = _test_files()
  assert files, "no test file found"
  at_top = [f for f in files if os.sep not in f]
  assert not at_top, f"test files directly under tests/: {at_top}; move each beside its package"
  for f in files:
    folder = os.path.dirname(f)
    if folder.split(os.sep)[0] in TEST_FOLDERS_OF_NO_PACKAGE:
      continue
    package = os.path.join(REPO_ROOT, "albert_tf", folder, "__init__.py")
    assert os.path.exists(package), (f"tests/{f}: albert_tf/{folder} is no package; put the file "
                                     "under the folder of the package it checks")
  names = [os.path.basename(f) for f in files]
  assert len(names) == len(set(names)), sorted(n for n in names if names.count(n) > 1)


def test_the_named_modules_have_their_test_file():
  """The modules a reader looks for tests of first find them by name."""
  for module in ("training/runner", "checkpoints/formats", "finetuning/job"):
    folder, name = os.path.split(module)
    assert os.path.join(folder, f"test_{name}.py") in _test_files(), module
