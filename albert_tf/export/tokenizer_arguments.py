"""The exporters take their tokenizer whole, as one settings.TokenizerSettings (`tokenizer`).
Until 0.4.0 they also take 0.3's spread-out arguments (spm_model_file, vocab_file, do_lower_case,
by position or by name), with a DeprecationWarning: `old_tokenizer_arguments` turns such a call
into the new one.

  @old_tokenizer_arguments(lambda self, model, spm_model_file=None, vocab_file=None,
                           do_lower_case=True, config_file=None: None)
  def __init__(self, model, tokenizer, config_file=None):
"""

import functools
import inspect

from albert_tf.core import deprecation
from albert_tf.core.settings import TokenizerSettings

# 0.3's arguments, gathered into a TokenizerSettings.
FIELDS = ("spm_model_file", "vocab_file", "do_lower_case")


def _is_new_call(new, args, kwargs):
  """Whether a call binds to the new signature `new` with a TokenizerSettings (or None where
  that is the default) as its `tokenizer`."""
  try:
    bound = new.bind(*args, **kwargs)
  except TypeError:
    return False
  bound.apply_defaults()
  tokenizer = bound.arguments["tokenizer"]
  return (isinstance(tokenizer, TokenizerSettings) or
          (tokenizer is None and new.parameters["tokenizer"].default is None))


def _called(function, args, values):
  """The dotted name of what a call called, for the warning: a class (its __init__), whose
  instance is the first argument, or a function."""
  if function.__name__ == "__init__":
    cls = type(args[0] if args else values["self"])
    return f"{cls.__module__}.{cls.__qualname__}"
  return f"{function.__module__}.{function.__qualname__}"


def old_tokenizer_arguments(old):
  """Lets the decorated function, which takes `tokenizer` (a TokenizerSettings), also be called
  as 0.3's was: with the parameters of `old` (a function, a lambda, that only stands for them),
  whose tokenizer fields become one TokenizerSettings, with a DeprecationWarning naming what was
  called.

  A call is 0.3's when it does not bind to the new signature with a TokenizerSettings as
  `tokenizer`: a file name or None in its place, or a field given by name.
  """
  old = inspect.signature(old)

  def decorate(function):
    new = inspect.signature(function)

    @functools.wraps(function)
    def call(*args, **kwargs):
      if _is_new_call(new, args, kwargs):
        return function(*args, **kwargs)
      bound = old.bind(*args, **kwargs)
      bound.apply_defaults()
      values = dict(bound.arguments)
      given = {field: values.pop(field) for field in FIELDS if field in values}
      name = _called(function, args, values)
      deprecation.warn_moved(f"{name}({', '.join(f'{f}=...' for f in given)})",
                             f"{name}(tokenizer=TokenizerSettings(...))", stacklevel=2)
      return function(**values, tokenizer=TokenizerSettings(**given))

    return call

  return decorate
