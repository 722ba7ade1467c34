"""--recompute_activations (albert_tf/layers/transformer.py, training/runner.py): a training step
that keeps only each transformer block's input and recomputes the block's activations in the
backward pass has the plain step's gradients (dropout on or off, shared or unshared layers, inner
groups, XLA, gradient accumulation, mixed_bfloat16, two mirrored replicas), with the dropout masks
of the forward pass; the binaries take the flag; and the memory pre-flight
(training/footprints.py, memory.py) counts what the step keeps and names the flag in a refusal.

The two steps are two graphs: Grappler (and XLA) fuse and order their float operations each on
its own, so their gradients are compared within float32 rounding (1e-6), not bit for bit."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

import albert_tf
from albert_tf.checkpoints.layout import original_variable_map
from albert_tf.core import errors, settings
from albert_tf.core.config import AlbertConfig
from albert_tf.data.pipeline import pretraining_dataset
from albert_tf.layers.transformer import SharedTransformer, set_recompute_activations
from albert_tf.optimization import Lamb
from albert_tf.training import footprints, memory
from albert_tf.training.pretraining import PretrainingObjective, PretrainingRunner
from albert_tf.training.runner import dropout_seed_states
from albert_tf.training.precision import policy_scope
from albert_tf.tasks.race import settings as race_settings
import warm_binaries
from helpers import ORIGINAL_MODEL, REPO_ROOT, run_binary
from test_memory_check import measured_peak_rss, pretraining_flags, write_pretraining_records

CONFIG = os.path.join(ORIGINAL_MODEL, "albert_config.json")
RECORDS = os.path.join(ORIGINAL_MODEL, "train.tfrecord")
BASE = os.path.join(REPO_ROOT, "data", "configs", "albert_base_v2.json")
TINY = os.path.join(REPO_ROOT, "data", "configs", "tiny_quickstart.json")
CPU = ["/job:localhost/replica:0/task:0/device:CPU:0"]
GIB = 2**30


def _config(**changes):
  """The fixture's tiny model (H 32, 3 layers, 4 heads) with `changes`."""
  with open(CONFIG, encoding="utf-8") as f:
    return AlbertConfig.from_dict(dict(json.load(f), **changes))


def _batch(batch_size=2):
  """A batch of the fixture's training records [batch_size, 24], 5 predictions each."""
  dataset = pretraining_dataset(RECORDS, 24, 5, batch_size, is_training=True, seed=3)
  return next(iter(dataset))


def _model(config, recompute, policy="float32"):
  """A seeded AlbertPretrainer: the same weights and dropout seed states at every call."""
  tf.keras.utils.set_random_seed(7)
  with policy_scope(policy):
    model = albert_tf.AlbertPretrainer(config)
  assert set_recompute_activations(model, recompute) == 1
  return model


def _seed_states(model):
  return [state.numpy().tolist() for state in dropout_seed_states(model)]


def _step_function(model, features, jit_compile=False):
  """The Runner's gradient of one micro-batch (objective, loss, tape) as a tf.function."""
  objective = PretrainingObjective()
  variables = model.trainable_variables

  def step():
    with tf.GradientTape() as tape:
      outputs = model(features, training=True)
      loss = objective.loss(objective.sums(outputs, features), objective.totals(features))
    return loss, [tf.convert_to_tensor(g) for g in tape.gradient(loss, variables)]
  return tf.function(step, jit_compile=jit_compile, autograph=False)


def _gradients(config, recompute, jit_compile=False, policy="float32"):
  """(loss, {variable path: gradient}, dropout seed states after the step) of one step."""
  model = _model(config, recompute, policy)
  loss, grads = _step_function(model, _batch(), jit_compile)()
  paths = [v.path for v in model.trainable_variables]
  return (float(loss), {p: g.numpy().astype(np.float32) for p, g in zip(paths, grads)},
          _seed_states(model))


def _assert_same_step(plain, recomputed, atol):
  loss, grads, seeds = plain
  loss_r, grads_r, seeds_r = recomputed
  assert abs(loss - loss_r) <= atol
  assert grads.keys() == grads_r.keys() and len(grads) > 20
  for path, g in grads.items():
    np.testing.assert_allclose(grads_r[path], g, rtol=0, atol=atol, err_msg=path)
  # The forward pass draws each dropout seed once, as the plain step: the generators end alike.
  assert seeds_r == seeds


# -- gradients --------------------------------------------------------------------------------
@pytest.mark.parametrize("changes", [
    {},
    {"hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1},
    pytest.param({"hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1,
                  "num_hidden_groups": 3}, marks=pytest.mark.slow),
    pytest.param({"hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1,
                  "num_hidden_groups": 2, "inner_group_num": 2}, marks=pytest.mark.slow),
    pytest.param({"hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1,
                  "parameter_sharing": "shared-attention"}, marks=pytest.mark.slow),
], ids=["shared", "dropout", "dropout_unshared", "dropout_groups_inner2", "shared_attention"])
def test_gradients_equal_the_plain_steps(changes):
  config = _config(**changes)
  plain = _gradients(config, False)
  _assert_same_step(plain, _gradients(config, True), atol=1e-6)
  if changes.get("hidden_dropout_prob"):
    # The masks matter: without dropout the gradients are others.
    no_dropout = _gradients(_config(**dict(changes, hidden_dropout_prob=0.0,
                                           attention_probs_dropout_prob=0.0)), False)
    assert max(np.abs(no_dropout[1][p] - g).max() for p, g in plain[1].items()) > 1e-3


@pytest.mark.slow
def test_gradients_equal_the_plain_steps_under_xla():
  config = _config(hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1)
  _assert_same_step(_gradients(config, False, jit_compile=True),
                    _gradients(config, True, jit_compile=True), atol=1e-6)


@pytest.mark.slow
def test_gradients_equal_the_plain_steps_in_mixed_bfloat16():
  # bfloat16 activations, float32 weights cast once a forward pass (weights_cast_once): the same
  # bfloat16 ops, so the gradients agree to float32 rounding of their float32 sums.
  config = _config(hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1)
  _assert_same_step(_gradients(config, False, policy="mixed_bfloat16"),
                    _gradients(config, True, policy="mixed_bfloat16"), atol=1e-6)


@pytest.mark.slow
def test_the_backward_pass_runs_each_block_again():
  # Each block's 6 dense MatMuls and 2 attention BatchMatMuls, once more per layer in the
  # gradient's graph; inference (training=False) is the plain graph.
  config = _config(inner_group_num=2)
  features = _batch()

  def matmuls(recompute):
    graph = _step_function(_model(config, recompute), features).get_concrete_function().graph
    return sum(op.type in ("MatMul", "BatchMatMulV2") for op in graph.get_operations())
  assert matmuls(True) - matmuls(False) == 3 * 2 * 8

  def inference_ops(recompute):
    model = _model(config, recompute)
    fn = tf.function(lambda: model(features, training=False)["masked_lm_logits"])
    return [op.type for op in fn.get_concrete_function().graph.get_operations()]
  assert inference_ops(True) == inference_ops(False)


def test_switch_and_config():
  model = _model(_config(), False)
  transformer = model.encoder.transformer
  assert transformer.recompute_activations is False
  assert set_recompute_activations(model, True) == 1 and transformer.recompute_activations
  config = transformer.get_config()
  assert config["recompute_activations"] is True
  assert SharedTransformer.from_config(config).recompute_activations is True
  # Inference is the same either way.
  features = _batch()
  a = model(features, training=False)["masked_lm_logits"]
  set_recompute_activations(model, False)
  np.testing.assert_array_equal(a, model(features, training=False)["masked_lm_logits"])


# -- the Runner ----------------------------------------------------------------------------------
def _one_update(recompute, jit_compile, accumulation):
  config = _config(hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1)
  model = _model(config, False)
  runner = PretrainingRunner(tf.distribute.get_strategy(), model, Lamb(), settings.TrainSettings(
      train_batch_size=4, learning_rate=1e-3, num_train_steps=4, num_warmup_steps=0,
      gradient_accumulation_steps=accumulation, jit_compile=jit_compile,
      jit_compile_fast_path=False, recompute_activations=recompute))
  assert model.encoder.transformer.recompute_activations is recompute
  values = runner.train_steps(iter(tf.data.Dataset.from_tensors(_batch(4)).repeat()), 1)
  return values["loss"], [v.numpy() for v in model.trainable_variables], _seed_states(model)


@pytest.mark.parametrize("jit_compile, accumulation", [
    pytest.param(False, 2, marks=pytest.mark.slow), pytest.param(True, 1, marks=pytest.mark.slow)],
    ids=["accumulation_2", "xla"])
def test_runner_update_equals_the_plain_update(jit_compile, accumulation):
  loss, weights, seeds = _one_update(False, jit_compile, accumulation)
  loss_r, weights_r, seeds_r = _one_update(True, jit_compile, accumulation)
  assert abs(loss - loss_r) < 1e-6 and seeds_r == seeds
  for w, w_r in zip(weights, weights_r):
    np.testing.assert_allclose(w_r, w, rtol=0, atol=1e-6)


_MIRRORED = """
import sys
sys.path.insert(1, sys.argv[1])  # the shared helpers of tests/
import numpy as np
import tensorflow as tf
cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
import test_recompute as t
from albert_tf.core import settings
from albert_tf.optimization import Lamb
from albert_tf.training.pretraining import PretrainingRunner

def updates(recompute):
  strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
  config = t._config(hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1)
  with strategy.scope():
    model = t._model(config, False)
  runner = PretrainingRunner(strategy, model, Lamb(), settings.TrainSettings(
      train_batch_size=4, learning_rate=1e-3, num_train_steps=4, num_warmup_steps=0,
      gradient_accumulation_steps=2, recompute_activations=recompute))
  batches = tf.data.Dataset.from_tensors(t._batch(4)).repeat()
  values = runner.train_steps(iter(strategy.experimental_distribute_dataset(batches)), 2)
  return values["loss"], [v.numpy() for v in model.trainable_variables]

(loss, weights), (loss_r, weights_r) = updates(False), updates(True)
print(abs(loss - loss_r), max(float(np.abs(a - b).max()) for a, b in zip(weights, weights_r)))
"""


@pytest.mark.slow
def test_two_mirrored_replicas_with_dropout_update_as_the_plain_step():
  # Two CPU replicas (configured before TensorFlow starts: a process of its own, a child of the
  # warm server, which has loaded TensorFlow but started no device), dropout on, 2 micro-batches
  # each, two updates: each replica's recomputation replays its own masks. Run beside this file
  # (the script imports it), the shared helpers of tests/ on the path.
  process = warm_binaries.start_python(
      ["-c", _MIRRORED, os.path.join(REPO_ROOT, "tests")], "serving",
      cwd=os.path.dirname(os.path.abspath(__file__)), stdout=subprocess.PIPE,
      stderr=subprocess.PIPE)
  out, err = process.communicate(timeout=600)
  assert process.returncode == 0, err[-3000:]
  loss_difference, weight_difference = map(float, out.split()[-2:])
  assert loss_difference < 1e-6 and weight_difference < 1e-6, out


@pytest.mark.slow
def test_run_pretraining_with_recompute_on_two_mirrored_replicas_reproduces_the_original(
    tmp_path):
  # The four updates of the original's fixture (tests/end_to_end/test_run_pretraining.py), each
  # replica's blocks recomputed.
  result = run_binary("run_pretraining", [
      f"--input_file={RECORDS}", f"--albert_config_file={CONFIG}",
      f"--init_checkpoint={os.path.join(ORIGINAL_MODEL, 'model.ckpt-0')}",
      "--train_batch_size=2", "--max_seq_length=24", "--max_predictions_per_seq=5",
      "--optimizer=lamb", "--learning_rate=0.01", "--num_train_steps=4", "--num_warmup_steps=2",
      "--iterations_per_loop=2", "--save_checkpoints_steps=4", f"--output_dir={tmp_path}",
      "--strategy=mirrored", "--cpu_devices=2", "--recompute_activations"])
  assert "MirroredStrategy with 2 replicas" in result.stderr
  assert "training recomputes each transformer block's activations" in result.stderr
  model = albert_tf.AlbertPretrainer(albert_tf.AlbertConfig.from_json_file(CONFIG))
  albert_tf.load_checkpoint(model, str(tmp_path))
  reader = tf.train.load_checkpoint(os.path.join(ORIGINAL_MODEL, "model.ckpt-4"))
  for name, var in original_variable_map(model).items():
    np.testing.assert_allclose(var.numpy(), reader.get_tensor(name), atol=1e-5, err_msg=name)


# -- the flag -------------------------------------------------------------------------------------
_PARSE = {
    "run_pretraining": ("settings.from_values(settings.PretrainingSettings, absl_flags.FLAGS)",
                        ["--input_file=i", "--output_dir=o"]),
    "run_classifier": ("flags.classifier_settings(s.ClassifierSettings, absl_flags.FLAGS)",
                       ["--task_name=mnli", "--data_dir=d", "--output_dir=o"]),
}


@pytest.mark.parametrize("binary", sorted(_PARSE))
def test_binaries_take_the_flag(binary):
  make, required = _PARSE[binary]
  code = ("import sys\n"
          "from absl import flags as absl_flags\n"
          f"from albert_tf import {binary}\n"
          "from albert_tf.core import settings\n"
          "from albert_tf.training import flags\n"
          "from albert_tf.tasks.classifier import settings as s\n"
          "absl_flags.FLAGS(sys.argv)\n"
          f"print({make}.train.recompute_activations)\n")
  def parsed(*argv):
    return subprocess.run([sys.executable, "-c", code, *required, *argv], cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=120, check=True).stdout.split()
  assert parsed() == ["False"]
  assert parsed("--recompute_activations") == ["True"]


# -- the memory pre-flight ----------------------------------------------------------------------
def _base(**changes):
  return AlbertConfig.from_dict(dict(AlbertConfig.from_json_file(BASE).to_dict(), **changes))


def test_estimate_keeps_one_hidden_tensor_per_block_and_one_blocks_activations():
  config = _base()
  b, t, h, i, n, l, p, v = 16, 512, 768, 3072, 12, 12, 20, 30000
  plain = footprints.estimate(config, b, t, max_predictions_per_seq=p)
  f = footprints.estimate(config, b, t, max_predictions_per_seq=p, recompute_activations=True)
  per_layer = b * t * (12 * h + 5 * i) + 3 * b * n * t * t  # what backprop keeps of a layer
  embeddings = b * t * (3 * 128 + 2 * h)
  assert plain.activations == 4 * (l * per_layer + embeddings) + 4 * 6 * b * p * v
  assert f.activations == 4 * (l * b * t * h + per_layer + embeddings) + 4 * 6 * b * p * v
  assert (f.state, f.runtime, f.recomputed) == (plain.state, plain.runtime, True)
  assert "16 sequences x 512 tokens with --recompute_activations" in f.describe()
  assert "with --recompute_activations" not in plain.describe()
  # 12 layers' activations become one layer's and 12 [b, T, H] (ALBERT-base at 16 x 512).
  assert footprints.gib(plain.total) == "16.93 GiB" and footprints.gib(f.total) == "2.77 GiB"
  # More blocks keep one more [b, T, H] each, not one more layer's activations.
  deeper = footprints.estimate(_base(num_hidden_layers=24, inner_group_num=2), b, t,
                               recompute_activations=True)
  shallow = footprints.estimate(config, b, t, recompute_activations=True)
  assert deeper.activations - shallow.activations == 4 * 36 * b * t * h


def _pretraining(batch, recompute=False, accumulation=1):
  return settings.PretrainingSettings(
      output_dir="o", input_file="i", model=settings.ModelSettings(max_seq_length=512),
      train=settings.TrainSettings(train_batch_size=batch, recompute_activations=recompute,
                                   gradient_accumulation_steps=accumulation))


def _refusal(monkeypatch, footprint, limit):
  monkeypatch.setattr(memory, "available", lambda: (limit, "this much free per test"))
  with pytest.raises(errors.MemoryCheckError) as e:
    memory.check(footprint, CPU, BASE)
  return str(e.value)


def test_refusal_names_the_flag_and_the_largest_batch_that_fits_with_it(monkeypatch):
  config = _base()
  f = footprints.job_footprint(_pretraining(64, accumulation=2), config, 2, 2)
  message = _refusal(monkeypatch, f, 16 * GIB)
  fit = f.recompute_fit
  largest = fit.largest_batch(16 * GIB)
  assert largest > 0 and largest % 4 == 0  # 2 replicas x 2 micro-batches
  assert message.endswith(f"; or --recompute_activations (the same gradients, for about a third "
                          f"more compute), with which --train_batch_size up to {largest} fits "
                          "(or skip this check with --nomemory_check)")
  assert message.startswith("training would need about")
  # That batch fits with the flag, the next multiple does not.
  def total(batch):
    return footprints.job_footprint(_pretraining(batch, True, 2), config, 2, 2).total
  assert total(largest) <= 16 * GIB < total(largest + 4)
  # With the flag on, the refusal does not name it again.
  on = footprints.job_footprint(_pretraining(4096, True), config, 1, 1)
  assert on.recompute_fit is None and on.recomputed
  message = _refusal(monkeypatch, on, 16 * GIB)
  assert "--recompute_activations (" not in message
  assert "sequences x 512 tokens with --recompute_activations" in message
  # Where not one sequence fits even with it, the flag is not offered.
  off = footprints.job_footprint(_pretraining(4096), config, 1, 1)
  message = _refusal(monkeypatch, off, off.runtime + off.state + 1)
  assert "--recompute_activations" not in message and "--train_batch_size" in message


def test_race_counts_its_choices_in_the_largest_batch(monkeypatch):
  race = race_settings.RaceSettings(output_dir="o", data_dir="d", do_train=True,
                                    model=settings.ModelSettings(max_seq_length=512),
                                    train=settings.TrainSettings(train_batch_size=32))
  f = footprints.job_footprint(race, _base(), 1, 1)
  largest = f.recompute_fit.largest_batch(16 * GIB)
  one = footprints.estimate(_base(), 1, 512, recompute_activations=True)
  assert largest == (16 * GIB - one.runtime - one.state) // one.activations // 4
  assert f"--train_batch_size up to {largest} fits" in _refusal(monkeypatch, f, 16 * GIB)


def test_run_pretraining_refusal_with_the_flag(tmp_path):
  # The binary takes the flag, and its pre-flight counts recomputed activations (4096 x 512 of
  # ALBERT-base still needs more than this machine has).
  records = tmp_path / "seq512.tfrecord"
  write_pretraining_records(records, 2, 512, 20, 30000)
  flags = pretraining_flags(BASE, records, tmp_path / "out", 4096, 512)
  result = run_binary("run_pretraining", flags + ["--recompute_activations"], check=False,
                      timeout=60)
  assert result.returncode == 1, result.stderr[-3000:]
  lines = [l for l in result.stderr.splitlines() if l.startswith("error:")]
  assert len(lines) == 1, result.stderr[-3000:]
  expected = footprints.estimate(_base(), 4096, 512, max_predictions_per_seq=20,
                                 recompute_activations=True)
  assert f"training would need about {footprints.gib(expected.total)}" in lines[0]
  assert "4096 sequences x 512 tokens with --recompute_activations" in lines[0]
  assert not os.path.exists(tmp_path / "out")


@pytest.mark.slow
def test_recompute_estimate_within_2x_of_measured_peak_rss(tmp_path):
  records = tmp_path / "seq64.tfrecord"
  write_pretraining_records(records, 32, 64, 20, 2000)
  flags = pretraining_flags(TINY, records, tmp_path / "out", 8, 64) + ["--recompute_activations"]
  measured, stderr = measured_peak_rss(flags)
  logged = [l for l in stderr.splitlines() if "memory check: training estimated at" in l]
  assert logged and "with --recompute_activations" in logged[0], stderr[-3000:]
  estimate = float(logged[0].split("estimated at ")[1].split(" GiB")[0]) * GIB
  assert 0.5 < estimate / measured < 2, (estimate, measured)
