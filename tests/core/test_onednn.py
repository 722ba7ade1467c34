"""albert_tf.core.onednn: the training binaries turn TensorFlow's oneDNN kernels on where its
default leaves them off, keep a user's TF_ENABLE_ONEDNN_OPTS, and give serving children
TensorFlow's default back."""

import os
import subprocess
import sys

import pytest

from albert_tf.core import onednn
from repo_paths import REPO_ROOT



@pytest.mark.parametrize("machine,system,flags,expected", [
    ("x86_64", "linux", {"avx2", "fma"}, True),
    ("x86_64", "linux", {"avx2", "avx512f", "amx_bf16"}, True),
    ("x86_64", "linux", {"avx", "sse4_2"}, False),       # no AVX2: Eigen is as good
    ("aarch64", "linux", {"asimd"}, False),              # the variable means Arm's library there
    ("x86_64", "darwin", {"avx2"}, False),
])
def test_applies_to_linux_x86_with_avx2_only(machine, system, flags, expected):
  assert onednn.applies(machine, system, frozenset(flags)) is expected


@pytest.fixture(name="fresh")
def fixture_fresh(monkeypatch):
  """A process as a binary's start: the variable unset, TensorFlow not imported yet."""
  monkeypatch.delenv(onednn.VARIABLE, raising=False)
  monkeypatch.delitem(sys.modules, "tensorflow", raising=False)
  monkeypatch.setattr(onednn, "_set_here", False)
  monkeypatch.setattr(onednn, "applies", lambda: True)
  return monkeypatch


def test_turned_on_where_unset_and_children_get_the_default_back(fresh):
  line = onednn.turn_on_for_training()
  assert os.environ[onednn.VARIABLE] == "1"
  assert line.startswith("TF_ENABLE_ONEDNN_OPTS=1: ") and "TF_ENABLE_ONEDNN_OPTS=0" in line
  assert onednn.VARIABLE not in onednn.child_environment()
  assert onednn.child_environment()["PATH"] == os.environ["PATH"]


@pytest.mark.parametrize("value", ["0", "1", "false"])
def test_a_users_value_is_kept_and_passed_on(fresh, value):
  fresh.setenv(onednn.VARIABLE, value)
  assert onednn.turn_on_for_training() is None
  assert os.environ[onednn.VARIABLE] == value
  assert onednn.child_environment()[onednn.VARIABLE] == value


def test_nothing_once_tensorflow_is_imported_or_where_it_does_not_apply(fresh):
  fresh.setitem(sys.modules, "tensorflow", object())
  assert onednn.turn_on_for_training() is None
  fresh.delitem(sys.modules, "tensorflow")
  fresh.setattr(onednn, "applies", lambda: False)
  assert onednn.turn_on_for_training() is None
  assert onednn.VARIABLE not in os.environ


@pytest.mark.slow  # two TensorFlow start-ups
def test_a_training_binarys_tensorflow_runs_onednn_where_it_applies():
  """running_job (every training binary's main) turns it on before TensorFlow loads: TensorFlow
  itself then reports oneDNN on, wherever applies() (on CPUs with VNNI or AMX its default is on
  anyway), and a user's 0 turns it off."""
  code = ("from albert_tf.training import flags as f\n"
          "with f.running_job():\n"
          "  from albert_tf.core import onednn\n"
          "  print('onednn', onednn.tensorflow_uses_onednn())\n")
  env = {k: v for k, v in os.environ.items() if k != onednn.VARIABLE}

  def run(**extra):
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300, check=True, cwd=REPO_ROOT, env=dict(env, **extra)).stdout
    return out.split()[-1] == "True"

  assert run() is onednn.applies()
  assert run(TF_ENABLE_ONEDNN_OPTS="0") is False
