"""Shared test helpers: fixture paths and an independent TF1-checkpoint writer."""

import io as pyio
import json
import os
import socket
import subprocess
import sys

import numpy as np
import sentencepiece as spm

import warm_binaries
from repo_paths import REPO_ROOT, TESTDATA

ORIGINAL_MODEL = os.path.join(TESTDATA, "original_model")

# What TensorFlow 2.21 prints on start-up on a CPU machine, none of it a problem: the binaries
# hide it (albert_tf.core.startup.quiet_tensorflow_startup).
TF_STARTUP_NOTICES = {
    "absl": "WARNING: All log messages before absl::InitializeLog() is called",
    "oneDNN": "oneDNN custom operations are on",
    "cudart": "Could not find cuda drivers on your machine",
    "AVX": "To enable the following instructions:",
    "cuInit": "failed call to cuInit",
}


# TensorFlow is imported where it is used: tests/conftest.py imports this module, so pytest's
# controlling process loads it too, and that process runs no test; loading TensorFlow there cost
# seconds of CPU and printed its start-up notices after the run's summary.
def write_tf1_checkpoint(prefix, tensors):
  """Writes {name: array} as a name-based TF1 checkpoint with the raw SaveV2 op (no albert_tf)."""
  import tensorflow as tf
  names = sorted(tensors)
  tf.raw_ops.SaveV2(prefix=prefix, tensor_names=names, shape_and_slices=[""] * len(names),
                    tensors=[tf.constant(np.asarray(tensors[n])) for n in names])
  return prefix


def read_tf1_checkpoint(prefix):
  import tensorflow as tf
  reader = tf.train.load_checkpoint(prefix)
  return {n: reader.get_tensor(n) for n in reader.get_variable_to_shape_map()}


def reference_batch():
  return dict(np.load(os.path.join(ORIGINAL_MODEL, "reference.npz")))


def run_binary(module, flags, check=True, env=None, timeout=600, cold=False):
  """Runs `python -m albert_tf.<module> <flags>` from the repository root, `env` added to the
  environment: from a warm start where that shows the same as a fresh interpreter
  (tests/warm_binaries.py), else, or with cold=True (a test of what the start-up prints), in a
  fresh one. With check, asserts it succeeded (showing the end of its stderr)."""
  environment = dict(os.environ, **(env or {}))
  if not cold and warm_binaries.can_run_warm(module, flags):
    result = warm_binaries.run_warm(module, flags, environment, timeout)
  else:
    result = subprocess.run([sys.executable, "-m", f"albert_tf.{module}"] + list(flags),
                            cwd=REPO_ROOT, capture_output=True, text=True, timeout=timeout,
                            env=environment)
  if check:
    assert result.returncode == 0, result.stderr[-3000:]
  return result


def free_ports(n):
  """n free TCP ports on 127.0.0.1 (for the workers of a multi-worker test cluster)."""
  sockets = [socket.socket() for _ in range(n)]
  for s in sockets:
    s.bind(("127.0.0.1", 0))
  ports = [s.getsockname()[1] for s in sockets]
  for s in sockets:
    s.close()
  return ports


def assert_same_checkpoint_values(prefix_a, prefix_b, atol=None):
  """Every variable value of two of our checkpoints is bit-identical (and there are many), or
  within `atol` where the two runs computed in other orders."""
  import tensorflow as tf
  a, b = tf.train.load_checkpoint(str(prefix_a)), tf.train.load_checkpoint(str(prefix_b))
  names = [n for n in a.get_variable_to_shape_map() if "VARIABLE_VALUE" in n]
  assert len(names) > 30
  for name in names:
    if atol is None:
      np.testing.assert_array_equal(a.get_tensor(name), b.get_tensor(name), err_msg=name)
    else:
      np.testing.assert_allclose(a.get_tensor(name), b.get_tensor(name), atol=atol, err_msg=name)


def start_binary(module, flags, env=None, cold=False, stdout=None, stderr=None):
  """`python -m albert_tf.<module> <flags>` started from the repository root, `env` added to the
  environment, its streams as subprocess.Popen takes them (text): a subprocess.Popen, or, where
  that shows the same (helpers.run_binary's rule), a warm_binaries.WarmProcess, which is handled
  alike (wait, communicate, signals)."""
  environment = dict(os.environ, **(env or {}))
  if not cold and warm_binaries.can_run_warm(module, flags):
    return warm_binaries.start_warm(module, flags, environment, stdout=stdout, stderr=stderr)
  return subprocess.Popen([sys.executable, "-m", f"albert_tf.{module}"] + list(flags),
                          cwd=REPO_ROOT, env=environment, stdout=stdout, stderr=stderr, text=True)


def cluster_environments(count):
  """The TF_CONFIG of each of `count` workers of one multi-worker cluster on this host."""
  cluster = {"worker": [f"127.0.0.1:{p}" for p in free_ports(count)]}
  return [{"TF_CONFIG": json.dumps({"cluster": cluster, "task": {"type": "worker",
                                                                  "index": index}})}
          for index in range(count)]


def run_workers(module, flags, count=2, timeout=600):
  """Runs `python -m albert_tf.<module> <flags>` as `count` workers of one multi-worker cluster
  on this host (TF_CONFIG each), side by side, and returns their stderr once all have exited 0."""
  procs = [start_binary(module, flags, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
           for env in cluster_environments(count)]
  outputs = [p.communicate(timeout=timeout) for p in procs]
  for p, (_, err) in zip(procs, outputs):
    assert p.returncode == 0, err[-3000:]
  return [err for _, err in outputs]


def other_spm_model(path):
  """A SentencePiece model, saved at `path`, other than the fixture's (trained on the NER
  fixture's words): the same ALBERT control pieces, other ids for the words."""
  with open(os.path.join(TESTDATA, "ner", "train.txt"), encoding="utf-8") as f:
    words = [line.split()[0] for line in f if line.strip() and not line.startswith("-DOCSTART-")]
  model = pyio.BytesIO()
  spm.SentencePieceTrainer.train(
      sentence_iterator=iter(" ".join(words[i:i + 20]) for i in range(0, len(words), 20)),
      model_writer=model, vocab_size=300, pad_id=0, unk_id=1, bos_id=-1, eos_id=-1,
      control_symbols="[CLS],[SEP],[MASK]", minloglevel=2)
  os.makedirs(os.path.dirname(path), exist_ok=True)
  with open(path, "wb") as f:
    f.write(model.getvalue())
  return str(path)
