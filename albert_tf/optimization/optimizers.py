"""AdamW and LAMB with the original's arithmetic.

Both keep Adam moments without bias correction, add weight decay to the update (not the loss)
except for variables whose original name matches LayerNorm, layer_norm or bias; LAMB scales each
update by the trust ratio ||w|| / ||update|| (1.0 where a norm is 0, and for the excluded
variables). Exclusions are decided on the original TF1 names, so they pick the same variables as
the original whatever our Keras names are.
"""

import re

import keras
import tensorflow as tf

DEFAULT_EXCLUDE = ("LayerNorm", "layer_norm", "bias")


class AdamWeightDecay(tf.Module):
  """The original's AdamWeightDecayOptimizer (slots `adam_m`, `adam_v`)."""

  def __init__(self, weight_decay_rate=0.01, beta_1=0.9, beta_2=0.999, epsilon=1e-6,
               exclude_from_weight_decay=DEFAULT_EXCLUDE, name="adamw"):
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
  def build(self, variables, names=None):
    """Creates the moment slots (call inside strategy.scope()).

    names: {id(variable): original name} used for the exclusions; defaults to variable paths.
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
                                        name=_slot_name(name, "adam_m")))
        self.slots_v.append(tf.Variable(tf.zeros(var.shape, tf.float32), trainable=False,
                                        name=_slot_name(name, "adam_v")))

  def slots_for(self, var):
    i = self._slot_index[id(var)]
    return self.slots_m[i], self.slots_v[i]

  def variable_name(self, var):
    return self._names[id(var)]

  def _excluded(self, name, patterns):
    return any(re.search(p, name) for p in patterns)

  def use_weight_decay(self, name):
    return bool(self.weight_decay_rate) and not self._excluded(name,
                                                               self.exclude_from_weight_decay)

  def use_layer_adaptation(self, name):  # pylint: disable=unused-argument
    return False

  # -- the update ------------------------------------------------------------------------------
  def update_direction(self, param, grad, m, v, name):
    """Returns (next_m, next_v, update) as the original computes them (all float32)."""
    grad = tf.cast(tf.convert_to_tensor(grad), tf.float32)  # dense, as the original's math
    next_m = self.beta_1 * m + (1.0 - self.beta_1) * grad
    next_v = self.beta_2 * v + (1.0 - self.beta_2) * tf.square(grad)
    update = next_m / (tf.sqrt(next_v) + self.epsilon)
    if self.use_weight_decay(name):
      update += self.weight_decay_rate * tf.cast(param, tf.float32)
    return next_m, next_v, update

  def trust_ratio(self, param, update, name):
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

  def apply_gradients(self, grads_and_vars, learning_rate, distributed=None):
    """Applies one update. Gradients must already be reduced across replicas and clipped.

    Works in a plain context or inside strategy.run (the update then runs once per variable
    copy, in cross-replica context). distributed=False applies directly, for a single replica
    whose step is compiled whole; None decides from the context.
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

  def slot_tensors(self):
    """{original name + '/adam_m' or '/adam_v': array}, for original-layout checkpoints."""
    out = {}
    for key, i in self._slot_index.items():
      name = self._names[key]
      out[name + "/adam_m"] = self.slots_m[i].numpy()
      out[name + "/adam_v"] = self.slots_v[i].numpy()
    return out


class Lamb(AdamWeightDecay):
  """The original's LAMBOptimizer: AdamW's update scaled by the layer-wise trust ratio."""

  def __init__(self, weight_decay_rate=0.01, beta_1=0.9, beta_2=0.999, epsilon=1e-6,
               exclude_from_weight_decay=DEFAULT_EXCLUDE, exclude_from_layer_adaptation=None,
               name="lamb"):
    super().__init__(weight_decay_rate, beta_1, beta_2, epsilon, exclude_from_weight_decay,
                     name=name)
    # As the original: without an explicit list, layer adaptation excludes what decay excludes.
    self.exclude_from_layer_adaptation = tuple(exclude_from_layer_adaptation or
                                               self.exclude_from_weight_decay)

  def use_layer_adaptation(self, name):
    return not self._excluded(name, self.exclude_from_layer_adaptation)


def _tf_variable(var):
  """The tf.Variable (possibly distributed) behind a Keras 3 variable."""
  return var.value if isinstance(var, keras.Variable) else var


def _slot_name(name, slot):
  return re.sub(r"[^A-Za-z0-9_.\-/]", "_", f"{name}/{slot}").replace("/", "__")


def create_optimizer(name, weight_decay_rate=0.01):
  """"lamb" or "adamw" with the original's hyper-parameters."""
  if name == "lamb":
    return Lamb(weight_decay_rate=weight_decay_rate)
  if name == "adamw":
    return AdamWeightDecay(weight_decay_rate=weight_decay_rate)
  raise ValueError(f"Not supported optimizer: {name!r} (choose lamb or adamw)")
