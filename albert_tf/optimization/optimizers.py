"""AdamW and LAMB with the original's arithmetic.

Both keep Adam moments without bias correction, add weight decay to the update (not the loss)
except for variables whose original name matches LayerNorm, layer_norm or bias; LAMB scales each
update by the trust ratio ||w|| / ||update|| (1.0 where a norm is 0, and for the excluded
variables). Exclusions are decided on the original TF1 names, so they pick the same variables as
the original whatever our Keras names are.
"""

import importlib
import re
from collections.abc import Iterable, Sequence

import keras
import tensorflow as tf

from albert_tf.core import optimizer_table

DEFAULT_EXCLUDE = ("LayerNorm", "layer_norm", "bias")
# The names of the two moments in checkpoints (the original's), from the optimizer table.
_M_SLOT, _V_SLOT = optimizer_table.OPTIMIZERS["adamw"].slots


class AdamWeightDecay(tf.Module):
  """AdamW, the original's AdamWeightDecayOptimizer (slots `adam_m`, `adam_v`).

  m = beta_1 m + (1 - beta_1) g; v = beta_2 v + (1 - beta_2) g^2 (no bias correction);
  update = m / (sqrt(v) + epsilon) + weight_decay_rate * w (the decay term only for variables
  whose original name matches none of `exclude_from_weight_decay`); w -= learning_rate * update.
  The learning rate is given to each `apply_gradients` (see `learning_rate_at`).

  Args:
    weight_decay_rate: float. The decoupled weight decay (0 for none).
    beta_1: float. Decay of the first moment.
    beta_2: float. Decay of the second moment.
    epsilon: float. Added to sqrt(v).
    exclude_from_weight_decay: sequence of regular expressions matched (re.search) against the
      original names; matching variables get no weight decay. Defaults to LayerNorm,
      layer_norm and bias, as the original.
    name: str. The tf.Module's name.

  Example:

  >>> import tensorflow as tf
  >>> from albert_tf.optimization import AdamWeightDecay
  >>> w = tf.Variable([1.0, -2.0])
  >>> optimizer = AdamWeightDecay(weight_decay_rate=0.01)
  >>> optimizer.build([w], {id(w): "bert/pooler/dense/kernel"})
  >>> _ = optimizer.apply_gradients([(tf.constant([0.5, 0.5]), w)], learning_rate=0.1)
  >>> [round(x, 4) for x in w.numpy().tolist()]  # w - 0.1 * (0.05 / sqrt(0.00025) + 0.01 w)
  [0.6828, -2.3142]
  """

  def __init__(self, weight_decay_rate: float = 0.01, beta_1: float = 0.9,
               beta_2: float = 0.999, epsilon: float = 1e-6,
               exclude_from_weight_decay: Sequence[str] | None = DEFAULT_EXCLUDE,
               name: str = "adamw"):
    super().__init__(name=name)
    self.weight_decay_rate = weight_decay_rate
    self.beta_1 = beta_1
    self.beta_2 = beta_2
    self.epsilon = epsilon
    self.exclude_from_weight_decay = tuple(exclude_from_weight_decay or ())
    self.slots_m = []
    self.slots_v = []
    self._slot_index = {}
    self._names = {}

  # -- set-up -----------------------------------------------------------------------------------
  def build(self, variables: Sequence[tf.Variable], names: dict[int, str] | None = None) -> None:
    """Creates the moment slots of `variables` (call inside strategy.scope()); variables
    already built are skipped.

    Args:
      variables: the variables to train.
      names: {id(variable): original name}, matched by the exclusions (see
        `layout.original_variable_map`); defaults to each variable's path.
    """
    names = names or {}
    for var in variables:
      if id(var) in self._slot_index:
        continue
      name = names.get(id(var), getattr(var, "path", var.name))
      self._names[id(var)] = name
      self._slot_index[id(var)] = len(self.slots_m)
      with tf.init_scope():
        self.slots_m.append(tf.Variable(tf.zeros(var.shape, tf.float32), trainable=False,
                                        name=_slot_name(name, _M_SLOT)))
        self.slots_v.append(tf.Variable(tf.zeros(var.shape, tf.float32), trainable=False,
                                        name=_slot_name(name, _V_SLOT)))

  def slots_for(self, var: tf.Variable) -> tuple[tf.Variable, tf.Variable]:
    """The (m, v) slots of a built variable."""
    i = self._slot_index[id(var)]
    return self.slots_m[i], self.slots_v[i]

  def variable_name(self, var: tf.Variable) -> str:
    """The name the exclusions are matched against (given to `build`)."""
    return self._names[id(var)]

  def _excluded(self, name, patterns):
    return any(re.search(p, name) for p in patterns)

  def use_weight_decay(self, name: str) -> bool:
    """Whether the variable of original name `name` gets weight decay."""
    return bool(self.weight_decay_rate) and not self._excluded(name,
                                                               self.exclude_from_weight_decay)

  def use_layer_adaptation(self, name: str) -> bool:
    """Whether the update is scaled by the trust ratio: never for AdamW (see `Lamb`)."""
    return False

  # -- the update ------------------------------------------------------------------------------
  def update_direction(self, param: tf.Variable, grad: tf.Tensor, m: tf.Tensor, v: tf.Tensor,
                       name: str) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
    """One step's moments and update, as the original computes them.

    Args:
      param: the variable (its value is decayed).
      grad: its gradient, dense or IndexedSlices (densified), of param's shape.
      m, v: the current first and second moments, float32.
      name: the variable's original name (for the exclusions).

    Returns:
      (next_m, next_v, update), float32 of param's shape; the step is learning_rate * update
      (times the trust ratio for LAMB).
    """
    grad = tf.cast(tf.convert_to_tensor(grad), tf.float32)  # dense, as the original's math
    next_m = self.beta_1 * m + (1.0 - self.beta_1) * grad
    next_v = self.beta_2 * v + (1.0 - self.beta_2) * tf.square(grad)
    update = next_m / (tf.sqrt(next_v) + self.epsilon)
    if self.use_weight_decay(name):
      update += self.weight_decay_rate * tf.cast(param, tf.float32)
    return next_m, next_v, update

  def trust_ratio(self, param: tf.Variable, update: tf.Tensor, name: str) -> tf.Tensor | float:
    """||param|| / ||update|| where layer adaptation applies (1.0 where either norm is 0), else
    1.0."""
    if not self.use_layer_adaptation(name):
      return 1.0
    w_norm = tf.norm(tf.cast(param, tf.float32), ord=2)
    g_norm = tf.norm(update, ord=2)
    return tf.where(w_norm > 0, tf.where(g_norm > 0, w_norm / g_norm, 1.0), 1.0)

  def _apply_one(self, param, grad, m, v, learning_rate, name):
    next_m, next_v, update = self.update_direction(param, grad, m, v, name)
    step = self.trust_ratio(param, update, name) * learning_rate * update
    return tf.group(param.assign_sub(tf.cast(step, param.dtype)), m.assign(next_m),
                    v.assign(next_v))

  def apply_gradients(self, grads_and_vars: Iterable[tuple], learning_rate,
                      distributed: bool | None = None) -> tf.Operation:
    """Applies one update. Gradients must already be reduced across replicas and clipped.

    Works in a plain context or inside strategy.run (the update then runs once per variable
    copy, in cross-replica context).

    Args:
      grads_and_vars: (gradient, variable) pairs of built variables; pairs whose gradient is
        None are skipped.
      learning_rate: float or float32 scalar tensor, this step's rate.
      distributed: False applies directly, for a single replica whose step is compiled whole;
        True through the strategy's extended.update; None decides from the context.

    Returns:
      The grouped update op.

    Raises:
      KeyError: for a variable that was not given to `build`.
    """
    grads_and_vars = [(g, v) for g, v in grads_and_vars if g is not None]
    if distributed is None:
      distributed = tf.distribute.has_strategy()
    if distributed and not tf.distribute.in_cross_replica_context():
      return tf.distribute.get_replica_context().merge_call(
          self._distributed_apply, args=(grads_and_vars, learning_rate))
    if distributed:
      return self._distributed_apply(tf.distribute.get_strategy(), grads_and_vars,
                                     learning_rate)
    ops = []
    for grad, var in grads_and_vars:
      m, v = self.slots_for(var)
      ops.append(self._apply_one(var, grad, m, v, learning_rate, self.variable_name(var)))
    return tf.group(*ops)

  def _distributed_apply(self, strategy, grads_and_vars, learning_rate):
    ops = []
    for grad, var in grads_and_vars:
      m, v = self.slots_for(var)
      name = self.variable_name(var)
      fn = lambda p, g, m_, v_, lr, _name=name: self._apply_one(p, g, m_, v_, lr, _name)
      ops.append(strategy.extended.update(_tf_variable(var), fn, args=(grad, m, v, learning_rate),
                                          group=True))
    return tf.group(*ops)

  def slot_tensors(self) -> dict:
    """The slots by their original-layout names, for original-layout checkpoints.

    Returns:
      {original name + "/adam_m" or "/adam_v": numpy array}.
    """
    out = {}
    for key, i in self._slot_index.items():
      name = self._names[key]
      out[f"{name}/{_M_SLOT}"] = self.slots_m[i].numpy()
      out[f"{name}/{_V_SLOT}"] = self.slots_v[i].numpy()
    return out


class Lamb(AdamWeightDecay):
  """The original's LAMBOptimizer: AdamW's update scaled by the layer-wise trust ratio
  ||w|| / ||update|| (1.0 where either norm is 0, and for variables excluded from layer
  adaptation). Slots `adam_m`, `adam_v` as AdamW's.

  Args:
    weight_decay_rate, beta_1, beta_2, epsilon, exclude_from_weight_decay: as `AdamWeightDecay`.
    exclude_from_layer_adaptation: sequence of regular expressions matched against the original
      names; matching variables take AdamW's update unscaled. None (the default): the weight
      decay exclusions, as the original.
    name: str. The tf.Module's name.
  """

  def __init__(self, weight_decay_rate: float = 0.01, beta_1: float = 0.9,
               beta_2: float = 0.999, epsilon: float = 1e-6,
               exclude_from_weight_decay: Sequence[str] | None = DEFAULT_EXCLUDE,
               exclude_from_layer_adaptation: Sequence[str] | None = None, name: str = "lamb"):
    super().__init__(weight_decay_rate, beta_1, beta_2, epsilon, exclude_from_weight_decay,
                     name=name)
    # As the original: without an explicit list, layer adaptation excludes what decay excludes.
    self.exclude_from_layer_adaptation = tuple(exclude_from_layer_adaptation or
                                               self.exclude_from_weight_decay)

  def use_layer_adaptation(self, name: str) -> bool:
    """Whether the update of the variable of original name `name` is scaled by the trust
    ratio."""
    return not self._excluded(name, self.exclude_from_layer_adaptation)


def _tf_variable(var):
  """The tf.Variable (possibly distributed) behind a Keras 3 variable."""
  return var.value if isinstance(var, keras.Variable) else var


def _slot_name(name, slot):
  return re.sub(r"[^A-Za-z0-9_.\-/]", "_", f"{name}/{slot}").replace("/", "__")


def create_optimizer(name: str, weight_decay_rate: float = 0.01) -> AdamWeightDecay:
  """An optimizer by name, with the original's hyper-parameters.

  Args:
    name: str. An entry of albert_tf.core.optimizer_table.OPTIMIZERS: "lamb" (`Lamb`) or
      "adamw" (`AdamWeightDecay`).
    weight_decay_rate: float. The decoupled weight decay.

  Returns:
    The optimizer (unbuilt: call its `build` with the variables to train).

  Raises:
    ValueError: for any other name (errors.UsageError).
  """
  module, _, cls = optimizer_table.entry(name).class_path.rpartition(".")
  return getattr(importlib.import_module(module), cls)(weight_decay_rate=weight_decay_rate)
