"""How a binary runs: absl flags, and the errors a user can fix as one line on stderr.

Every binary ends with `def run(): cli.run(main, required_flags=(...))`, the entry point that
`python -m albert_tf.<binary>` and the `albert-<binary>` scripts (pyproject.toml) both call.

  error: --max_seq_length=512: cannot use sequence length 512 because ...

A usage error (a bad flag value, a missing required flag, settings that cannot work together:
errors.UsageError) exits with status 2; a run that failed on something outside the flags (any
other albert_tf.errors.AlbertError: a config or checkpoint that does not match, a malformed data
file, another run holding --output_dir; or a missing file) with 1. Neither prints absl's flag help or a traceback:
--verbose or ALBERT_TF_TRACEBACK=1 shows the traceback. Any other exception is a bug and keeps
its traceback.

Imports no TensorFlow: --help answers at once.
"""

import os
import sys

from absl import app, flags

from albert_tf import errors, startup

TRACEBACK_VARIABLE = "ALBERT_TF_TRACEBACK"
USAGE_EXIT_CODE = errors.USAGE_EXIT_CODE
FAILED_RUN_EXIT_CODE = errors.FAILED_RUN_EXIT_CODE

flags.DEFINE_bool("verbose", False,
                  f"On an error, show its traceback (also with {TRACEBACK_VARIABLE}=1).")


def exit_code(error):
  """USAGE_EXIT_CODE or FAILED_RUN_EXIT_CODE for an error the user fixes; None for a bug.

  Args:
    error: the exception a binary's main() raised.
  """
  if isinstance(error, (app.UsageError, flags.Error)):
    return USAGE_EXIT_CODE
  if errors.is_user_error(error):
    return errors.exit_code(error)
  if isinstance(error, FileNotFoundError):
    return FAILED_RUN_EXIT_CODE
  return None


def message(error):
  """The error as one line: a missing file named with its path."""
  if isinstance(error, FileNotFoundError) and error.filename is not None:
    text = f"no such file or directory: {error.filename}"
  else:
    text = str(error) or type(error).__name__
  return " ".join(text.split())


def _wants_traceback(argv=None):
  if os.environ.get(TRACEBACK_VARIABLE, "") not in ("", "0"):
    return True
  if argv is not None:  # the flags did not parse: read --verbose from the command line itself
    return "--verbose" in argv
  return flags.FLAGS.is_parsed() and flags.FLAGS.verbose


def fail(text, code):
  """Ends the process with `error: text` on stderr and status `code`."""
  sys.stdout.flush()
  print(f"error: {text}", file=sys.stderr, flush=True)
  sys.exit(code)


def _parse_flags(argv):
  try:
    return flags.FLAGS(argv)
  except flags.Error as e:
    if _wants_traceback(argv):
      raise
    fail(message(e), USAGE_EXIT_CODE)


def _one_line_errors(main):
  def wrapped(argv):
    try:
      return main(argv)
    except Exception as e:  # pylint: disable=broad-except
      code = exit_code(e)
      if code is None or _wants_traceback():
        raise
      fail(message(e), code)
  return wrapped


def run(main, required_flags=()):
  """Runs a binary's main(argv) under absl with one-line errors (see the module docstring).

  Args:
    main: the binary's main(argv).
    required_flags: names of the flags that must be given.
  """
  for name in required_flags:
    flags.mark_flag_as_required(name)
  # TensorFlow's runtime notices at error severity (startup.runtime_noise_pattern) are dropped
  # from stderr for the whole run; every other line passes as it comes.
  with startup.stderr_without(startup.runtime_noise_pattern()):
    app.run(_one_line_errors(main), flags_parser=_parse_flags)
