"""The XLA choice of the training step (albert_tf/training/fast_path.py): --jit_compile, except
mixed_bfloat16 on CPUs only, where XLA misses oneDNN's bf16 kernels; and the Runner compiles with
that choice. No timing here: the speed behind the rule is tools/benchmark.py's to measure."""

import logging

import pytest
import tensorflow as tf

import albert_tf
from albert_tf.core import hardware
from albert_tf.optimization import create_optimizer
from albert_tf.core.settings import TrainSettings
from albert_tf.training import precision
from albert_tf.training.fast_path import choose_jit_compile
from albert_tf.training.pretraining import PretrainingRunner
from helpers import ORIGINAL_MODEL

CPU = ["/job:localhost/replica:0/task:0/device:CPU:0"]
TWO_CPUS = ["/job:localhost/replica:0/task:0/device:CPU:0",
            "/job:localhost/replica:0/task:0/device:CPU:1"]
GPU = ["/job:localhost/replica:0/task:0/device:GPU:0"]
TPU = [f"/job:worker/replica:0/task:0/device:TPU:{i}" for i in range(4)]


@pytest.mark.parametrize("requested, policy, devices, fast_path, expected, native", [
    # Not asked for: never XLA.
    (False, "float32", CPU, True, False, True),
    (False, "mixed_bfloat16", GPU, True, False, True),
    (False, "mixed_bfloat16", CPU, False, False, True),
    # float32 and float16 keep XLA everywhere.
    (True, "float32", CPU, True, True, True),
    (True, "mixed_float16", CPU, True, True, True),
    (True, "float32", GPU, True, True, True),
    # bf16 keeps XLA on accelerators...
    (True, "mixed_bfloat16", GPU, True, True, True),
    (True, "mixed_bfloat16", TPU, True, True, True),
    (True, "mixed_bfloat16", ["CPU:0", "GPU:0"], True, True, True),
    # ... and not on CPUs alone (one device or the split CPU of --cpu_devices), unless the fast
    # path is turned off.
    (True, "mixed_bfloat16", CPU, True, False, True),
    (True, "mixed_bfloat16", TWO_CPUS, True, False, True),
    (True, "mixed_bfloat16", ["cpu:0"], True, False, True),
    (True, "mixed_bfloat16", CPU, False, True, True),
    # Without bf16 units neither path reaches oneDNN bf16 kernels: the request stands.
    (True, "mixed_bfloat16", CPU, True, True, False),
    (True, "mixed_bfloat16", TWO_CPUS, True, True, False),
])
def test_truth_table(requested, policy, devices, fast_path, expected, native):
  choice = choose_jit_compile(requested, policy, devices, fast_path, native_bf16=native)
  assert choice.jit_compile is expected
  # A reason exactly where the request is overruled.
  assert (choice.reason is not None) == (requested and not expected)


def test_reason_says_why_and_how_to_keep_xla():
  reason = choose_jit_compile(True, "mixed_bfloat16", CPU, native_bf16=True).reason
  assert "--mixed_precision=mixed_bfloat16" in reason and "oneDNN" in reason
  assert "--nojit_compile_fast_path" in reason and hardware.describe() in reason
  assert "\n" not in reason


def _runner(policy, **settings):
  config = albert_tf.AlbertConfig.from_json_file(f"{ORIGINAL_MODEL}/albert_config.json")
  with precision.policy_scope(policy):
    model = albert_tf.AlbertPretrainer(config)
  return PretrainingRunner(tf.distribute.get_strategy(), model, create_optimizer("lamb"),
                           TrainSettings(**settings))


def test_runner_compiles_with_the_choice(caplog):
  # XLA is turned off only on CPUs alone that have bfloat16 units (the rule's last row).
  on_cpus_only = not (tf.config.list_logical_devices("GPU")
                      or tf.config.list_logical_devices("TPU")) and hardware.has_native_bf16()
  with caplog.at_level(logging.WARNING, logger="albert_tf"):
    bf16 = _runner("mixed_bfloat16", jit_compile=True)
  assert bf16.jit_compile is not on_cpus_only
  assert bf16._fused_step._jit_compile is bf16.jit_compile
  warnings = [r.getMessage() for r in caplog.records if "--nojit_compile_fast_path" in
              r.getMessage()]
  assert len(warnings) == (1 if on_cpus_only else 0)
  caplog.clear()
  with caplog.at_level(logging.WARNING, logger="albert_tf"):
    kept = _runner("mixed_bfloat16", jit_compile=True, jit_compile_fast_path=False)
    plain = _runner("float32", jit_compile=True)
    default = _runner("mixed_bfloat16")
  assert kept.jit_compile and plain.jit_compile and not default.jit_compile
  assert not caplog.records
