"""How a binary runs: absl flags, and the errors a user can fix as one line on stderr.

Every binary ends with `def run(): cli.run(main, required_flags=(...))`, the entry point that
`python -m albert_tf.<binary>` and the `albert-<binary>` scripts (pyproject.toml) both call.

  error: --max_seq_length=512: cannot use sequence length 512 because ...

A usage error (a bad flag value, a missing required flag, settings that cannot work together:
errors.UsageError) exits with status 2; a run that failed on something outside the flags (any
other albert_tf.core.errors.AlbertError: a config or checkpoint that does not match, a malformed
data file, another run holding --output_dir; a missing file, an output that exists, a file given as
a directory, a full or read-only disk) with 1.
Neither prints absl's flag help or a traceback: --verbose or ALBERT_TF_TRACEBACK=1 shows the
traceback. Any other exception is a bug and keeps its traceback.

--help (-h, --helpshort) prints the binary's docstring, then its own flags and the albert_tf
flags it shares with other binaries (training.flags, export.portable_flags, --verbose), with their
help, and exits 0; --helpfull adds absl's own flags, as absl has it.

Imports no TensorFlow: --help answers at once.
"""

import errno
import os
import re
import sys

from absl import app, flags

from albert_tf.core import bounds, errors, path_checks, startup

TRACEBACK_VARIABLE = "ALBERT_TF_TRACEBACK"
USAGE_EXIT_CODE = errors.USAGE_EXIT_CODE
FAILED_RUN_EXIT_CODE = errors.FAILED_RUN_EXIT_CODE

flags.DEFINE_bool("verbose", False,
                  f"On an error, show its traceback (also with {TRACEBACK_VARIABLE}=1); "
                  "show the notices an export quiets (ONNX Runtime's quantizer).")


def exit_code(error):
  """USAGE_EXIT_CODE or FAILED_RUN_EXIT_CODE for an error the user fixes; None for a bug.

  Args:
    error: the exception a binary's main() raised.
  """
  if isinstance(error, (app.UsageError, flags.Error)):
    return USAGE_EXIT_CODE
  if errors.is_user_error(error):
    return errors.exit_code(error)
  if remote_storage_error(error) is not None or write_error(error) is not None:
    return FAILED_RUN_EXIT_CODE
  if isinstance(error, _PATH_ERRORS) and (
      error.filename is not None or isinstance(error, (FileNotFoundError, FileExistsError))):
    return FAILED_RUN_EXIT_CODE
  return None


# A path that is not what the flag needs: one line naming it, whichever flag or file it came from.
_PATH_MESSAGES = {
    FileNotFoundError: "no such file or directory: {path}",
    FileExistsError: "{path} exists already: remove it or give another path",
    IsADirectoryError: "{path} is a directory where a file is needed: give a file's path",
    NotADirectoryError: ("{path}: a part of this path is a file, not a directory: give a path "
                         "under a directory"),
    PermissionError: "permission denied: {path}: give a path this user can read or write",
}
_PATH_ERRORS = tuple(_PATH_MESSAGES)


# A write the file system refused, whichever file it was: the fix. A file object's write() or
# close() raises it without the path; the message then names the outputs the flags give.
_WRITE_FIXES = {
    errno.ENOSPC: "free space on that disk, or give a path on another one",
    errno.EDQUOT: "free space within this user's disk quota, or give a path on another disk",
    errno.EROFS: "give a path on a file system this machine can write",
}


def write_error(error):
  """The one line for a write refused by a full disk, an exhausted disk quota or a read-only
  file system (ENOSPC, EDQUOT, EROFS: an OSError, or TensorFlow's error of the same, as a
  checkpoint's save raises), naming the path and the fix; None for any other error.

  Args:
    error: the exception a binary's main() raised.
  """
  code, path = _refused_write(error)
  if code is None:
    return None
  reason = os.strerror(code)
  if isinstance(error, OSError) and error.strerror:
    reason = error.strerror
  if path is None:
    outputs = _given_outputs()
    path = f"the outputs ({outputs})" if outputs else "an output"
  return f"cannot write {path}: {reason}: {_WRITE_FIXES[code]}"


def _refused_write(error):
  """(errno, path or None) of a write_error, else (None, None)."""
  if errors.is_user_error(error):  # its own message says it
    return None, None
  if isinstance(error, OSError):
    return (error.errno, error.filename) if error.errno in _WRITE_FIXES else (None, None)
  # TensorFlow's file system writes "<path>; <strerror>". Looked up, not imported, as in
  # remote_storage_error.
  errors_module = getattr(sys.modules.get("tensorflow"), "errors", None)
  if errors_module is None or not isinstance(error, errors_module.OpError):
    return None, None
  for code in _WRITE_FIXES:
    reason = os.strerror(code)
    if reason in (error.message or ""):
      found = re.search(rf"(\S+); {re.escape(reason)}", error.message)
      return code, found.group(1) if found else None
  return None, None


def _given_outputs():
  """`--output_dir=out, --export_dir=serving` for the OUTPUT_FLAGS the parsed flags give."""
  values = flags.FLAGS
  if not values.is_parsed():
    return ""
  return ", ".join(f"--{name}={values[name].value}" for name in OUTPUT_FLAGS
                   if name in values and values[name].value)


_REMOTE_PATH = re.compile(r"\b[a-z][a-z0-9+.-]*://\S+")


def remote_storage_error(error):
  """The one line for a TensorFlow file-system error on a path with a scheme (gs://, s3://,
  hdfs://): the store could not be reached, or refused these credentials. None for any other
  error. TensorFlow is looked up, not imported: a binary that never loaded it raised none."""
  tf = sys.modules.get("tensorflow")
  errors_module = getattr(tf, "errors", None)
  if errors_module is None or not isinstance(error, errors_module.OpError):
    return None
  found = _REMOTE_PATH.search(error.message or "")
  if found is None:
    return None
  return (f"cannot use {found.group(0).rstrip('.,;:')}: {error.message.splitlines()[0]}. Check "
          "the path, the network and the credentials (gs://: `gcloud auth "
          "application-default login`, or GOOGLE_APPLICATION_CREDENTIALS naming a key file)")


def message(error):
  """The error as one line: a file system error named with its path."""
  whole = remote_storage_error(error) or write_error(error)
  if whole is not None:
    return " ".join(whole.split())
  kind = next((k for k in _PATH_MESSAGES if type(error) is k), None)
  if kind is not None and error.filename is not None:
    text = _PATH_MESSAGES[kind].format(path=error.filename)
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


# The values every binary's flag of that name must keep, checked once the flags parse, before any
# work (core.bounds: the typed settings check the same table as they are made), with the bounds
# of the task whose flags are defined (bounds.register).
FLAG_BOUNDS = bounds.FLAG_BOUNDS
# Where a binary writes: given empty, they would write into the working directory.
OUTPUT_FLAGS = ("output_dir", "cached_dir", "export_dir", "export_path", "output_file")
# The checkpoint a binary starts from or exports: in every binary that has the flag, every mode
# reads it when given (its config, tokenizer and weights).
CHECKPOINT_FLAGS = ("init_checkpoint",)
# The model's and the tokenizer's files: read, when given, by every binary that has the flag;
# --vocab_file only without --spm_model_file (the original's `--vocab_file=unused` beside one).
INPUT_FILE_FLAGS = ("albert_config_file", "spm_model_file", "vocab_file")


def check_flag_values(values):
  """Raises flags.IllegalFlagValueError (a usage error: exit 2) for a flag of FLAG_BOUNDS (or of
  a task's registered bounds: bounds.flag_bounds) out of its bounds or not finite
  (`--train_batch_size=0: must be at least 1`), an OUTPUT_FLAGS flag
  given as an empty string, a CHECKPOINT_FLAGS flag naming no checkpoint
  (path_checks.checkpoint_problem) or an INPUT_FILE_FLAGS flag naming no file (local paths only:
  before TensorFlow loads).

  Args:
    values: the parsed absl FlagValues.
  """
  for name, bound in bounds.flag_bounds().items():
    if name not in values:
      continue
    value = values[name].value
    rule = bounds.violation(name, value, bound)
    if rule is not None:
      raise flags.IllegalFlagValueError(f"--{name}={value}: {rule}")
  for name in OUTPUT_FLAGS:
    if name in values and values[name].present and not str(values[name].value or "").strip():
      raise flags.IllegalFlagValueError(
          f"--{name} is empty: give a path (an empty one would write into the working "
          "directory)")
  for name in CHECKPOINT_FLAGS:
    if name in values and values[name].value:
      problem = path_checks.checkpoint_problem(values[name].value)
      if problem:
        raise flags.IllegalFlagValueError(f"--{name}={values[name].value}: {problem}")
  for name in INPUT_FILE_FLAGS:
    if name == "vocab_file" and "spm_model_file" in values and values["spm_model_file"].value:
      continue
    if name in values and values[name].value:
      problem = path_checks.file_problem(values[name].value)
      if problem:
        raise flags.IllegalFlagValueError(f"--{name}={values[name].value}: {problem}")


def _parse_flags(argv):
  try:
    remaining = flags.FLAGS(argv)
    check_flag_values(flags.FLAGS)
    return remaining
  except flags.Error as e:
    if _wants_traceback(argv):
      raise
    fail(message(e), USAGE_EXIT_CODE)


def _one_line_errors(main):
  def wrapped(argv):
    try:
      return main(argv)
    except Exception as e:
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
