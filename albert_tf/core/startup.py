"""Quiet TensorFlow start-up, for the binaries and the library: no C++ notices that read like
errors.

On a CPU machine `import tensorflow` (TF 2.21) prints, before any of our output:

  WARNING: All log messages before absl::InitializeLog() is called are written to STDERR
  I0000 ... port.cc:153] oneDNN custom operations are on. ...
  I0000 ... cudart_stub.cc:31] Could not find cuda drivers on your machine, GPU will not be used.
  I0000 ... cpu_feature_guard.cc:227] This TensorFlow binary is optimized to use ...
  To enable the following instructions: AVX2 AVX512F ..., rebuild TensorFlow with ...
  E0000 ... cuda_platform.cc:52] failed call to cuInit: INTERNAL: CUDA error: ... (303)

(the first three twice: the profiler plugin links its own copy of the logging code). What each
depends on, measured on TF 2.21:
- TF_CPP_MIN_LOG_LEVEL=1 hides the INFO lines TensorFlow logs once its logging has read the
  variable (cpu_feature_guard), keeping warnings and errors; 3 would hide errors too.
- The oneDNN and cudart_stub lines are INFO lines logged by static initializers while the
  shared libraries load, before TensorFlow applies TF_CPP_MIN_LOG_LEVEL: no value hides them
  (not even 3). Only TF_ENABLE_ONEDNN_OPTS=0 drops the oneDNN line, by turning oneDNN off, which
  changes speed and numerics: not ours to change. The absl WARNING line is printed with the first
  of these early messages, so it goes with them.
- The cuInit error comes with the first device listing (the first op), in every process of a
  GPU build where no NVIDIA driver is loaded (TF's stub then cannot load libcuda: error 303);
  CUDA_VISIBLE_DEVICES does not avoid it. Where a driver is loaded a failed cuInit is a real
  error, so it is only hidden where there is none.

So quiet_tensorflow_startup() sets TF_CPP_MIN_LOG_LEVEL=1 unless the user set it, and applies
that level to the lines logged before TensorFlow reads it: while TensorFlow is imported (and,
with no NVIDIA driver, lists its devices), stderr goes through a small filter process that drops
INFO lines, the absl line and (no driver) the cuInit error, and passes every other line on as it
comes. Real warnings and errors, C++ or Python, during the import or after, are kept.

The library (`import albert_tf`, quiet_tensorflow_import()) hides the same start-up lines where a
user's script imports TensorFlow, but changes nothing that outlives the import: it sets no
variable (a library's import should not change how TensorFlow logs in the user's process, nor in
the processes it starts), so TensorFlow logs at the user's level afterwards, and its filter drops
cpu_feature_guard's message too. A user's TF_CPP_MIN_LOG_LEVEL=0 shows everything. What the
binaries hide while they run (runtime_noise_pattern, and quiet_tensorflow_log_notices's Python
records) stays visible in a user's process: hiding it would take stderr for the whole process.

TensorFlow is not imported here: create_pretraining_data runs without it and imports it only for
remote paths. The binaries call quiet_tensorflow_startup() first thing in main(); importing
albert_tf installs quiet_tensorflow_import().
"""

import contextlib
import logging
import os
import re
import subprocess
import sys

from albert_tf.core.import_hooks import ImportHook

_LEVEL_VARIABLE = "TF_CPP_MIN_LOG_LEVEL"

# absl's prefix: severity letter, MMDD, time (before absl's initialisation: 0000 00:00:<epoch>),
# thread id, file:line].
_PREFIX = rb"\d{4} [\d:.]+ +\d+ "
_INFO_LINE = re.compile(rb"^I" + _PREFIX + rb"[\w.-]+:\d+\] ")
_ABSL_PRE_INIT_LINE = re.compile(
    rb"^WARNING: All log messages before absl::InitializeLog\(\) is called are written to STDERR$")
_CUINIT_ERROR_LINE = re.compile(
    rb"^E" + _PREFIX + rb"cuda_platform\.cc:\d+\] failed call to cuInit: ")


def nvidia_driver_loaded():
  """Whether this machine has an NVIDIA driver, so that a failed cuInit is a real error.

  /proc/driver/nvidia is the Linux kernel module's (also inside containers); WSL2 has no such
  entry but gives its GPUs through /dev/dxg.
  """
  return os.path.exists("/proc/driver/nvidia") or os.path.exists("/dev/dxg")


def _min_log_level():
  try:
    return int(os.environ.get(_LEVEL_VARIABLE, "0"))
  except ValueError:
    return 0  # as TensorFlow reads a value that is not a number


# Logged at error severity while a graph runs (SQuAD v2's int32 ops), on CPUs with AVX-512 too,
# for kernels that then run on Eigen: nothing to fix.
_ONEDNN_FALLBACK_LINE = re.compile(
    rb"^E" + _PREFIX + rb"util\.cc:\d+\] oneDNN supports DT_\w+ only on platforms with AVX-512\. "
    rb"Falling back to the default Eigen-based implementation if present\.$")


def runtime_noise_pattern():
  """The lines to hide while a binary runs (a bytes regex), or None where the user set
  TF_CPP_MIN_LOG_LEVEL=0 (show everything)."""
  if os.environ.get(_LEVEL_VARIABLE) == "0":
    return None
  return _ONEDNN_FALLBACK_LINE.pattern


def noise_pattern(no_driver):
  """The lines to hide at the current TF_CPP_MIN_LOG_LEVEL (a bytes regex), or None for none."""
  if _min_log_level() < 1:
    return None  # the user asked for TensorFlow's INFO lines: show everything
  return b"|".join([_INFO_LINE.pattern, _ABSL_PRE_INIT_LINE.pattern] +
                   ([_CUINIT_ERROR_LINE.pattern] if no_driver else []))


# The second line of cpu_feature_guard's INFO message, which has no prefix of its own: the
# binaries' TF_CPP_MIN_LOG_LEVEL=1 keeps TensorFlow from logging the message, the library's filter
# drops this line with the first.
_CPU_FEATURE_CONTINUATION_LINE = re.compile(
    rb"^To enable the following instructions: [\w ,.-]+ in other operations, rebuild TensorFlow "
    rb"with the appropriate compiler flags\.$")


def library_noise_pattern(no_driver):
  """The lines `import albert_tf` hides while TensorFlow is imported (a bytes regex), or None
  where the user set TF_CPP_MIN_LOG_LEVEL=0 (show everything).

  What noise_pattern hides, at the level TensorFlow leaves unset: the INFO lines (only notices are
  logged at that severity during the import), absl's pre-initialisation line and, with no NVIDIA
  driver, the cuInit error; and cpu_feature_guard's second line, which TensorFlow logs without
  a prefix because no level is set to keep it from being logged at all.
  """
  if os.environ.get(_LEVEL_VARIABLE) == "0":
    return None
  return b"|".join([_INFO_LINE.pattern, _ABSL_PRE_INIT_LINE.pattern,
                    _CPU_FEATURE_CONTINUATION_LINE.pattern] +
                   ([_CUINIT_ERROR_LINE.pattern] if no_driver else []))


# How long a finished filter may take to copy what is left in its pipe.
_FILTER_DRAIN_SECONDS = 2
# The filter process: copies stdin to stdout line by line, less the lines matching argv[1].
# Ctrl-C stops the binary, not the copy of what it printed; it ends when the binary's writes end.
_FILTER = """
import os, re, signal, sys
signal.signal(signal.SIGINT, signal.SIG_IGN)
noise = re.compile(os.fsencode(sys.argv[1]))
for line in sys.stdin.buffer:
  if not noise.match(line.rstrip(b"\\r\\n")):
    os.write(1, line)
"""


def _flush_python_stderr():
  if sys.stderr is not None:  # None under pythonw
    sys.stderr.flush()


@contextlib.contextmanager
def stderr_without(pattern):
  """Sends file descriptor 2 (C++ and Python alike, and the child processes started meanwhile)
  through a filter process dropping the lines that match `pattern` (bytes; None: none), then
  restores it.

  A process, not a thread of this one or a file replayed afterwards: what TensorFlow prints
  before a failed CHECK aborts the import still reaches stderr.
  """
  if pattern is None:
    yield
    return
  _flush_python_stderr()
  try:
    saved = os.dup(2)
  except OSError:  # no stderr (a daemon's closed descriptor): nothing to quiet
    yield
    return
  try:
    child = subprocess.Popen([sys.executable, "-I", "-S", "-c", _FILTER, os.fsdecode(pattern)],
                             stdin=subprocess.PIPE, stdout=saved)
  except OSError:
    os.close(saved)
    yield
    return
  os.dup2(child.stdin.fileno(), 2)
  try:
    yield
  finally:
    _flush_python_stderr()
    os.dup2(saved, 2)
    os.close(saved)
    child.stdin.close()
    try:
      child.wait(timeout=_FILTER_DRAIN_SECONDS)  # what it printed comes before what follows
    except subprocess.TimeoutExpired:
      # A process started meanwhile still writes into the filter (a multiprocessing pool's
      # resource tracker lives until this process exits): waiting would never end. The filter
      # goes on copying its lines and ends with the last writer.
      pass


class _QuietTensorFlowImport(ImportHook):
  """Imports `tensorflow` with its start-up noise filtered out of stderr."""

  def __init__(self):
    super().__init__("tensorflow")

  def pattern(self, no_driver):
    return noise_pattern(no_driver)

  def around_import(self, module, run):
    no_driver = not nvidia_driver_loaded()
    with stderr_without(self.pattern(no_driver)):
      run()
      if no_driver:
        # The cuInit error comes with the first device listing, which the first op would do
        # anyway; listing physical devices leaves device and thread settings open.
        module.config.list_physical_devices("GPU")


# TensorFlow's own Python log lines that say nothing to a user: each checkpoint save's timing, and
# the SavedModel export's renaming of signature inputs that TF Serving never sees.
_TENSORFLOW_LOG_NOTICES = ("Sharding callback duration", "Function `%s` contains input name(s)")


class _DropTensorFlowNotices(logging.Filter):
  """Drops the log records that begin with one of _TENSORFLOW_LOG_NOTICES."""

  def filter(self, record):
    return not str(record.msg).startswith(_TENSORFLOW_LOG_NOTICES)


def quiet_tensorflow_log_notices():
  """Hides TensorFlow's Python log notices (_TENSORFLOW_LOG_NOTICES); idempotent. TensorFlow
  logs them through absl's logger (the checkpoint and SavedModel code) or its own."""
  for name in ("absl", "tensorflow"):
    logger = logging.getLogger(name)
    if not any(isinstance(f, _DropTensorFlowNotices) for f in logger.filters):
      logger.addFilter(_DropTensorFlowNotices())


class _QuietLibraryImport(_QuietTensorFlowImport):
  """Imports `tensorflow` for the library: its start-up notices hidden, nothing else changed."""

  def pattern(self, no_driver):
    return library_noise_pattern(no_driver)


def quiet_tensorflow_import():
  """For the library (`import albert_tf`): while TensorFlow is imported, whoever imports it and
  whenever, its start-up notices (library_noise_pattern) are kept out of stderr. No variable is
  set, TensorFlow's log level is the user's, and stderr is restored once the import is done: a
  warning or error TensorFlow logs during the import, or anything after it, still shows. Does
  nothing once TensorFlow is imported (the notices are out by then)."""
  if "tensorflow" not in sys.modules:
    _QuietLibraryImport().install()


def quiet_tensorflow_startup():
  """Hides TensorFlow's start-up notices (see the module docstring), keeping real warnings.

  Call first thing in a binary's main(), before TensorFlow is imported. Sets
  TF_CPP_MIN_LOG_LEVEL=1 (INFO hidden, warnings and errors shown) unless the environment already
  sets it; with TF_CPP_MIN_LOG_LEVEL=0 nothing is hidden. Hides TensorFlow's Python log notices
  (quiet_tensorflow_log_notices). Does nothing more once TensorFlow is imported (the notices are
  out by then, and TensorFlow has read its log level).
  """
  quiet_tensorflow_log_notices()
  if "tensorflow" in sys.modules:
    return
  os.environ.setdefault(_LEVEL_VARIABLE, "1")
  _QuietTensorFlowImport().install()
