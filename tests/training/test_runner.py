"""training/runner.py's Runner, its loop: iterations_per_loop (updates per compiled call) is a
speed setting only: a tiny model trained 12 steps in calls of 1, 5 or 12 updates ends
bit-identical, and so does a run stopped mid-call (as by SIGTERM) at a step that is no multiple
of the call's length, then resumed.

Each call runs its updates in a tf.while_loop. Grappler rewrites every copy of the step in a graph
on its own: a step traced twice (once before the loop, once in it) came out with float operations in
another order in one copy, so the first update of each call differed in the last bits from the
others. The settings here make that visible: num_warmup_steps=3, whose constant 3.0 Grappler shares
with GELU's exponent 3, so that it rewrites GELU's 0.044715 * x**3 in one order in the loop's copy
and in another before the loop; and weights drawn at initializer_range 0.2, whose activations are
large enough for such a last-bit difference to reach the gradients.

Also: a diverging run's stop message names the newest checkpoint by what is known of it."""

import os

import numpy as np
import pytest
import tensorflow as tf

import albert_tf
from albert_tf.core.settings import TrainSettings
from albert_tf.data.pipeline import pretraining_dataset
from albert_tf.optimization import Lamb
from albert_tf.training import checkpointing
from albert_tf.training import runner as runners
from albert_tf.training.preemption import Preempted
from albert_tf.training.pretraining import PretrainingRunner
from helpers import ORIGINAL_MODEL

RECORDS = os.path.join(ORIGINAL_MODEL, "train.tfrecord")
STEPS = 12


def _train(directory, iterations_per_loop, stop_after=None):
  """Trains a seeded tiny model to STEPS in calls of `iterations_per_loop` updates, resuming from
  `directory`'s newest checkpoint and saving there at STEPS (model.ckpt-12). With `stop_after`:
  stop_requested (what SIGTERM sets) is set after the call that reaches that step, so the next
  call stops after its first update and the run saves there and raises Preempted."""
  config = albert_tf.AlbertConfig.from_json_file(os.path.join(ORIGINAL_MODEL,
                                                              "albert_config.json"))
  config.initializer_range = 0.2
  tf.keras.utils.set_random_seed(7)
  model = albert_tf.AlbertPretrainer(config)
  settings = TrainSettings(train_batch_size=2, learning_rate=0.01, num_train_steps=STEPS,
                           num_warmup_steps=3, save_checkpoints_steps=STEPS,
                           iterations_per_loop=iterations_per_loop)
  runner = PretrainingRunner(tf.distribute.get_strategy(), model, Lamb(), settings)
  checkpoint = runner.checkpoint()
  checkpointing.restore_or_initialize(checkpoint, model, str(directory), None)
  manager = checkpointing.checkpoint_manager(checkpoint, str(directory), 0)

  def make_iterator(step):
    return iter(pretraining_dataset(RECORDS, 24, 5, 2, is_training=True, seed=5,
                                    start_step=step))

  def stop(event):
    if stop_after is not None and event.step >= stop_after:
      runner.stop_requested.assign(True)
  return runners.run_training(runner, make_iterator, manager, settings, [stop])


def _assert_same_state(prefix_a, prefix_b):
  """Every variable of two of our checkpoints (weights, LAMB's slots, step, dropout seeds) is
  bit-identical, save_counter aside (a preempted run saves once more)."""
  a, b = tf.train.load_checkpoint(str(prefix_a)), tf.train.load_checkpoint(str(prefix_b))
  names = [n for n in a.get_variable_to_shape_map()
           if "VARIABLE_VALUE" in n and not n.startswith("save_counter")]
  assert len(names) > 90
  differing = [n for n in names if not np.array_equal(a.get_tensor(n), b.get_tensor(n))]
  assert not differing, f"{len(differing)} of {len(names)} differ, e.g. {differing[:3]}"


@pytest.mark.slow
def test_iterations_per_loop_and_a_resume_mid_call_leave_the_arithmetic_alone(tmp_path):
  for loop in (1, 5, STEPS):
    assert _train(tmp_path / f"loop{loop}", loop) == STEPS

  # Calls of 5: steps 1-5, then step 6 alone (stopped), resumed with 7-11 and 12 against the
  # uninterrupted 6-10 and 11-12.
  with pytest.raises(Preempted) as stopped:
    _train(tmp_path / "resumed", 5, stop_after=5)
  assert stopped.value.step == 6
  assert _train(tmp_path / "resumed", 5) == STEPS

  final = f"model.ckpt-{STEPS}"
  for other in (tmp_path / "loop1", tmp_path / f"loop{STEPS}", tmp_path / "resumed"):
    _assert_same_state(tmp_path / "loop5" / final, other / final)


class _DivergingRunner:
  """Each call reaches its last step with a NaN loss."""

  def __init__(self):
    self.global_step = tf.Variable(0, dtype=tf.int64)

  def train_until_stopped(self, iterator, steps):
    del iterator
    self.global_step.assign_add(steps)
    return {"loss": float("nan")}, False


class _Manager:
  def __init__(self, latest):
    self.latest_checkpoint = latest

  def save(self, checkpoint_number):
    raise AssertionError(f"saved step {checkpoint_number}")


@pytest.mark.parametrize("latest, named", [
    ("out/model.ckpt-8", "the last checkpoint saved before the loss stopped being finite is "
                         "out/model.ckpt-8, at step 8"),
    (None, "no checkpoint was saved before the loss stopped being finite")])
def test_a_diverging_run_names_the_last_checkpoint_without_calling_it_good(latest, named):
  settings = TrainSettings(num_train_steps=20, save_checkpoints_steps=4, iterations_per_loop=3)
  with pytest.raises(runners.NonFiniteLossError) as stopped:
    runners.run_training(_DivergingRunner(), lambda step: None, _Manager(latest), settings)
  message = str(stopped.value)
  assert message.startswith("loss is nan at step 3; stopping without saving.")
  assert named in message.lower() and "good" not in message
