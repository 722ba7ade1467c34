"""Mixed precision: the Keras policy, and dynamic loss scaling for float16."""

import contextlib

import keras
import tensorflow as tf

from albert_tf.core import errors
from albert_tf.core.settings import PRECISION_POLICIES, SERVING_POLICIES


def set_policy(name):
  if name not in PRECISION_POLICIES:
    raise errors.UsageError(
        f"unknown --mixed_precision {name!r}; choose one of {PRECISION_POLICIES}")
  keras.mixed_precision.set_global_policy(name)


@contextlib.contextmanager
def policy_scope(name):
  """Builds the layers made inside under Keras policy `name` (e.g. mixed_bfloat16: float32
  variables, bfloat16 compute; bfloat16, a bfloat16 export's: bfloat16 variables), restoring the
  previous global policy afterwards."""
  known = PRECISION_POLICIES + tuple(p for p in SERVING_POLICIES.values()
                                     if p not in PRECISION_POLICIES)
  if name not in known:
    raise errors.UsageError(f"unknown precision policy {name!r}; choose one of {known}")
  previous = keras.mixed_precision.global_policy()
  keras.mixed_precision.set_global_policy(name)
  try:
    yield
  finally:
    keras.mixed_precision.set_global_policy(previous)


def serving_policy(serving_precision):
  """The Keras policy an export with --serving_precision=`serving_precision` is built under."""
  if serving_precision not in SERVING_POLICIES:
    raise errors.UsageError(f"--serving_precision={serving_precision}: choose one of "
                            f"{sorted(SERVING_POLICIES)}")
  return SERVING_POLICIES[serving_precision]


def serving_model(serving_precision, make_model, model=None):
  """The model an export with --serving_precision=`serving_precision` serves: `model` itself where
  it was built under that precision's policy; else make_model() built under that policy, holding
  `model`'s weights when there is one (bfloat16: weights in bfloat16 but LayerNorm's, see
  settings.SERVING_POLICIES).

  Args:
    serving_precision: "float32" or "bfloat16" (a key of settings.SERVING_POLICIES).
    make_model: a function building a fresh model of `model`'s architecture.
    model: the keras.Model whose weights are exported, or None for an exporter that loads its
      checkpoint into the model built here.

  Raises:
    errors.UsageError: an unknown serving precision.
  """
  policy = serving_policy(serving_precision)
  if model is not None and model.dtype_policy.name == policy:
    return model
  with policy_scope(policy):
    built = make_model()
  if model is not None:
    built.set_weights(model.get_weights())
  return built


def loss_scale_for(name):
  """A DynamicLossScale for mixed_float16, else None (create inside strategy.scope())."""
  return DynamicLossScale() if name == "mixed_float16" else None


class DynamicLossScale(tf.Module):
  """Scales the loss for float16: halves on non-finite gradients (the update is skipped),
  doubles after `growth_interval` finite steps."""

  def __init__(self, initial_scale=2.0 ** 15, growth_interval=2000, name="loss_scale"):
    super().__init__(name=name)
    agg = tf.VariableAggregation.ONLY_FIRST_REPLICA
    self.scale = tf.Variable(initial_scale, dtype=tf.float32, trainable=False, aggregation=agg)
    self.good_steps = tf.Variable(0, dtype=tf.int64, trainable=False, aggregation=agg)
    self.growth_interval = growth_interval

  def update(self, grads_finite):
    """Returns the ops adjusting the scale after a step whose gradients were (not) finite."""
    grow = grads_finite & (self.good_steps + 1 >= self.growth_interval)
    new_scale = tf.where(grads_finite, tf.where(grow, self.scale * 2.0, self.scale),
                         tf.maximum(self.scale / 2.0, 1.0))
    new_good = tf.where(grads_finite & ~grow, self.good_steps + 1, tf.zeros_like(self.good_steps))
    return tf.group(self.scale.assign(new_scale), self.good_steps.assign(new_good))
