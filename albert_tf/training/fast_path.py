"""Whether a step is compiled with XLA: --jit_compile, unless XLA is the slower path on the
device the step runs on; and a step's first trace, announced.

XLA's CPU backend compiles matmuls to its own kernels and does not reach oneDNN's bfloat16 ones
(AMX, AVX512-BF16), so under mixed_bfloat16 on a host without GPU or TPU the XLA step is the
slower one, about twice TensorFlow's own graph, which runs oneDNN (figures: docs/speed.md, "XLA
on a CPU"). There the step is compiled without XLA, and a warning says so. Where the CPU has no
bfloat16 units (hardware.has_native_bf16(): neither AMX-BF16 nor AVX512-BF16), oneDNN has no
bfloat16 kernels either, both paths convert element by element, and XLA is not the slower one,
so the request stands. The rule:

  --jit_compile   mixed_bfloat16   step runs on                 compiled with XLA
  false           any              any                          no
  true            float32/float16  any                          yes
  true            mixed_bfloat16   a GPU or TPU                 yes
  true            mixed_bfloat16   CPUs without bf16 units      yes
  true            mixed_bfloat16   CPUs with AMX / AVX512-BF16  no, unless --nojit_compile_fast_path

--nojit_compile_fast_path (settings.TrainSettings.jit_compile_fast_path=False) keeps XLA as asked,
e.g. to compare the two paths.

Imports no TensorFlow: the binaries, tools/benchmark.py and the tests ask it with device strings.
"""

import collections
import logging
import time

from albert_tf.core import hardware
from albert_tf.training.memory import device_types, local_devices

logger = logging.getLogger("albert_tf")

JitChoice = collections.namedtuple("JitChoice", ["jit_compile", "reason"])

# The Keras policies whose CPU matmuls XLA computes more slowly than TensorFlow's oneDNN kernels.
SLOWER_UNDER_XLA_ON_CPU = ("mixed_bfloat16",)


def choose_jit_compile(requested, policy, devices, fast_path=True, native_bf16=None):
  """Whether to compile with XLA, per the rule in this module's docstring.

  Args:
    requested: bool, --jit_compile.
    policy: the step's Keras precision policy name ("float32", "mixed_bfloat16",
      "mixed_float16").
    devices: the devices the step runs on: tf.distribute device strings
      (strategy.extended.worker_devices, "/job:localhost/replica:0/task:0/device:CPU:0") or
      types ("CPU", "GPU:0").
    fast_path: bool, --jit_compile_fast_path; False keeps `requested` whatever the device.
    native_bf16: bool, whether the host CPU has bfloat16 units; None asks
      hardware.has_native_bf16().

  Returns:
    JitChoice(jit_compile, reason): reason is None where the request stands, else the one line
    to log, saying why XLA is off and how to keep it.
  """
  if not (requested and fast_path and policy in SLOWER_UNDER_XLA_ON_CPU):
    return JitChoice(bool(requested), None)
  if device_types(devices) - {"CPU"}:
    return JitChoice(True, None)
  if not (hardware.has_native_bf16() if native_bf16 is None else native_bf16):
    return JitChoice(True, None)
  return JitChoice(False, (
      f"--jit_compile with --mixed_precision={policy} on CPUs only ({hardware.describe()}): "
      f"compiling without XLA, whose CPU backend does not reach oneDNN's bfloat16 kernels "
      f"(slower steps than without XLA); --nojit_compile_fast_path keeps XLA"))


def jit_compile_for(model, strategy, requested, fast_path=True):
  """choose_jit_compile for `model` (its Keras policy) on `strategy`'s devices, the reason logged
  as a warning where the request is overruled: what the training Runner and the benchmark's
  forward line compile with. Returns the bool."""
  choice = choose_jit_compile(requested, model.dtype_policy.name, local_devices(strategy),
                              fast_path)
  if choice.reason:
    logger.warning(choice.reason)
  return choice.jit_compile


def trace_first_call(function, what, args):
  """Traces tf.function `function` for `args` before its first call (which then reuses the
  trace), saying so: else that call is a long silent wait on a CPU. Whether it traced.

  Args:
    function: the step's tf.function.
    what: what it is, for the log ("the training step").
    args: the arguments of its first call.
  """
  if function.experimental_get_tracing_count():
    return False
  logger.info(f"tracing {what} (its first call) ...")
  started = time.time()
  function.get_concrete_function(*args)
  logger.info(f"traced {what} in {time.time() - started:.1f} s")
  return True
