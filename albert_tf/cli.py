"""How a binary runs: absl flags, and the errors a user can fix as one line on stderr.

Every binary ends with `def run(): cli.run(main, required_flags=(...))`, the entry point that
`python -m albert_tf.<binary>` and the `albert-<binary>` scripts (pyproject.toml) both call.

  error: --max_seq_length=512: cannot use sequence length 512 because ...

A usage error (a bad flag value, a missing required flag, settings that cannot work together:
errors.UsageError) exits with status 2; a run that failed on something outside the flags (any
other albert_tf.errors.AlbertError: a config or checkpoint that does not match, a malformed data
file, another run holding --output_dir; a missing file, or an output that exists) with 1.
Neither prints absl's flag help or a traceback: --verbose or ALBERT_TF_TRACEBACK=1 shows the
traceback. Any other exception is a bug and keeps its traceback.

--help (-h, --helpshort) prints the binary's docstring, then its own flags and the albert_tf
flags it shares with other binaries (common_flags, export.portable_flags, --verbose), with their
help, and exits 0; --helpfull adds absl's own flags, as absl has it.

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
  if isinstance(error, (FileNotFoundError, FileExistsError)):
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


# What asks for the short help; absl's --helpfull (every flag, absl's own too) is left to absl.
HELP_ARGUMENTS = ("--help", "-help", "-h", "--helpshort", "-helpshort", "-?")
_PACKAGE = "albert_tf"


def _wants_help(argv):
  for arg in argv[1:]:
    if arg == "--":  # what follows is not a flag
      return False
    if arg in HELP_ARGUMENTS:
      return True
  return False


def _binary_module(main):
  """The module name of the binary whose main() is `main`, also when it runs as __main__."""
  name = main.__module__
  if name == "__main__":
    spec = getattr(sys.modules["__main__"], "__spec__", None)
    name = spec.name if spec is not None else name
  return name


def help_text(main):
  """What --help prints for the binary whose main() is `main`: its docstring, then the flags it
  defines and the albert_tf flags it reads from shared modules, each module's with their help.

  absl's own --help lists only the flags of the file run as __main__ (so none through the
  `albert-*` scripts, whose __main__ is a wrapper) and hides the shared ones behind --helpfull.

  Args:
    main: the binary's main(argv).
  """
  binary = _binary_module(main)
  by_module = flags.FLAGS.flags_by_module_dict()
  # absl files the flags of the file run as __main__ under sys.argv[0].
  own = [m for m in by_module if m in (binary, sys.argv[0], main.__module__)]
  shared = sorted((m for m in by_module
                   if m not in own and (m == _PACKAGE or m.startswith(_PACKAGE + "."))),
                  key=lambda m: (m == __name__, m))  # --verbose last
  doc = (getattr(sys.modules.get(main.__module__), "__doc__", None) or "").strip("\n")
  sections = [doc or f"USAGE: {binary} [flags]"]
  for module in own + shared:
    heading = binary if module in own else f"{module} (shared)"
    text = flags.FLAGS.module_help(module)
    sections.append(text.replace(f"\n{module}:", f"\n{heading}:", 1).strip("\n"))
  sections.append("--helpfull lists absl's flags too.")
  return "\n\n".join(sections) + "\n"


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
  if _wants_help(sys.argv):
    # Before absl parses: its --help lists too little and exits 1, and a missing required flag
    # must not stop a user asking how to give it.
    sys.stdout.write(help_text(main))
    sys.stdout.flush()
    sys.exit(0)
  for name in required_flags:
    flags.mark_flag_as_required(name)
  # TensorFlow's runtime notices at error severity (startup.runtime_noise_pattern) are dropped
  # from stderr for the whole run; every other line passes as it comes.
  with startup.stderr_without(startup.runtime_noise_pattern()):
    app.run(_one_line_errors(main), flags_parser=_parse_flags)
