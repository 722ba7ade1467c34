"""The errors a user can fix, one hierarchy: every deliberate refusal in albert_tf raises one.

The binaries (albert_tf/core/cli.py) print an AlbertError as one `error:` line, with exit status 2
for a UsageError (flags or settings that cannot work together) and 1 for the rest (a run that
failed on something outside the flags: a config, a checkpoint, a data file, a cache, memory).
Any other exception is a bug and keeps its traceback.

Each class also derives from the builtin a Python caller caught before this module existed
(ValueError, KeyError, ImportError, RuntimeError), so `except ValueError:` keeps working.

A message names what is wrong, where (the flag, the file, the variable) and the fix:

>>> from albert_tf.core import errors
>>> try:
...   raise errors.ConfigError("albert_config.json: hidden_act 'gelu2' is not an activation; "
...                            "use one of gelu, gelu_new, relu, swish")
... except ValueError as e:
...   print(errors.is_user_error(e), errors.exit_code(e))
True 1

Imports nothing: cli.py reads it before TensorFlow is imported.
"""

USAGE_EXIT_CODE = 2
FAILED_RUN_EXIT_CODE = 1


class AlbertError(Exception):
  """Base of the errors a user fixes; reported as one line, exit status 1."""

  exit_code = FAILED_RUN_EXIT_CODE


class UsageError(AlbertError, ValueError):
  """Flags or settings that cannot work together (exit status 2, as a flag error)."""

  exit_code = USAGE_EXIT_CODE


class ConfigError(AlbertError, ValueError):
  """An albert_config.json that is malformed, or that differs from what it must match."""


class CheckpointError(AlbertError, ValueError):
  """A checkpoint that cannot be read, or that does not match the config or the model."""


class HeadAmbiguityError(CheckpointError):
  """A checkpoint whose task head can be read more than one way: the fix is --head."""


class ResumeMismatchError(AlbertError, ValueError):
  """A resumed output_dir whose earlier run used other settings (config, labels, lengths)."""


class DataFormatError(AlbertError, ValueError):
  """An input data file that is malformed; the message names the file and, where it can, the
  line."""


class CacheError(AlbertError, ValueError):
  """A feature or record cache that is stale or unreadable."""


class MissingKeyError(AlbertError, KeyError):
  """A name that is not there (a signature input, a label, a variable). Unlike KeyError's, its
  str() is the message itself, not its repr."""

  def __str__(self):
    return str(self.args[0]) if self.args else ""


class MissingExtraError(AlbertError, ImportError):
  """A command that needs an optional dependency group (a pip extra) that is not installed."""

  def __init__(self, command, extra, module):
    super().__init__(f"{command} needs the {extra} extra (no module named {module!r}): "
                     f'pip install "albert-tf[{extra}]"')
    self.command, self.extra, self.module = command, extra, module


class NotADirectoryPathError(AlbertError, NotADirectoryError):
  """A path given for a directory to write into (an --output_dir) that is a file. Unlike
  NotADirectoryError's, its str() is the message itself."""


class MemoryCheckError(AlbertError, RuntimeError):
  """A run (training, evaluation, prediction or export) estimated to need more memory than the
  process has."""


def is_user_error(error):
  """True for an error the user fixes (an AlbertError), False for a bug."""
  return isinstance(error, AlbertError)


def exit_code(error):
  """The exit status a binary ends with on `error`: 2 for usage, 1 for a failed run."""
  return getattr(error, "exit_code", FAILED_RUN_EXIT_CODE)


def require_module(module, extra, command):
  """Imports and returns `module`, or raises MissingExtraError naming the pip `extra` that
  provides it and the `command` that needs it.

  Args:
    module: the module's import name, e.g. "tf2onnx".
    extra: the albert-tf extra that installs it, e.g. "portable".
    command: what needs it, for the message, e.g. "export_onnx".
  """
  import importlib
  try:
    return importlib.import_module(module)
  except ModuleNotFoundError as e:
    if e.name is None or e.name.split(".")[0] != module.split(".")[0]:
      raise  # the module is there but one of its own imports is broken: a bug, not an extra
    raise MissingExtraError(command, extra, module) from e


def require_installed(module, extra, command):
  """Raises MissingExtraError unless `module` can be imported, without importing it (for a
  module whose import must happen later, inside a filter of its notices).

  Args: as require_module's.
  """
  import importlib.util
  try:
    found = importlib.util.find_spec(module.split(".")[0]) is not None
  except ModuleNotFoundError:
    found = False
  if not found:
    raise MissingExtraError(command, extra, module)
