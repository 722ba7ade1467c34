"""Whether TensorFlow runs its CPU kernels in oneDNN: the training binaries turn it on where
TensorFlow's own default leaves it off.

TensorFlow 2.21's x86 Linux wheels contain oneDNN but use it by default only on CPUs with
AVX512-VNNI, AVX-VNNI, AVX512-BF16 or AMX; on an AVX2-only CPU (AMD Zen 3 and older, Intel
before Cascade Lake) the matmuls and their gradients run in Eigen unless TF_ENABLE_ONEDNN_OPTS=1.
For ALBERT's training step on such a CPU oneDNN is clearly faster (docs/speed.md, "CPUs: matrix
units, precision and runtimes"); serving was not faster with it there, so only the training
binaries turn it on, and tools/benchmark.py times the SavedModel with TensorFlow's default, as
TF Serving runs it.

The variable is read once, when TensorFlow is first imported: call this before that. A value the
user set is kept (TF_ENABLE_ONEDNN_OPTS=0 gives Eigen back). On CPUs where TensorFlow's default is
already on, "1" changes nothing. Numerics: float32 results differ from Eigen's in the last bits
(another summation order), as they already do between CPUs that have oneDNN by default and those
that do not; every tolerance of the suite covers both.
"""

import os
import platform
import sys

from albert_tf.core import hardware

VARIABLE = "TF_ENABLE_ONEDNN_OPTS"

# Whether this process set VARIABLE itself (not the user), so that its children can be given
# TensorFlow's default back (child_environment).
_set_here = False


def applies(machine=None, system=None, flags=None):
  """Whether oneDNN is worth turning on here: a Linux x86-64 CPU with AVX2 (oneDNN's float32
  kernels need AVX2 to beat Eigen; elsewhere the variable means something else, on aarch64 the
  Arm Compute Library, or nothing)."""
  machine = platform.machine() if machine is None else machine
  system = sys.platform if system is None else system
  flags = hardware.cpu_flags() if flags is None else flags
  return system.startswith("linux") and machine in ("x86_64", "AMD64") and "avx2" in flags


def turn_on_for_training():
  """Sets TF_ENABLE_ONEDNN_OPTS=1 where applies() and the user left it unset and TensorFlow is
  not imported yet. Returns the line to log when it did, else None."""
  global _set_here
  if VARIABLE in os.environ or "tensorflow" in sys.modules or not applies():
    return None
  os.environ[VARIABLE] = "1"
  _set_here = True
  return (f"{VARIABLE}=1: TensorFlow's CPU kernels run in oneDNN ({hardware.describe()}); "
          f"set {VARIABLE}=0 for Eigen")


def child_environment():
  """os.environ for a child process that should run with TensorFlow's own default: without
  VARIABLE where this process set it, else unchanged (a user's value is passed on)."""
  env = dict(os.environ)
  if _set_here:
    env.pop(VARIABLE, None)
  return env


def tensorflow_uses_onednn():
  """Whether this process's TensorFlow runs its CPU kernels in oneDNN (imports TensorFlow)."""
  from tensorflow.python.util import _pywrap_util_port
  return bool(_pywrap_util_port.IsMklEnabled())
