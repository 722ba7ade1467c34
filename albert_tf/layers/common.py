"""Small building blocks shared by the ALBERT layers: the original's initializer, LayerNorm and
dense arithmetic, each defined once, and the original variable names of a dense or LayerNorm."""

import contextlib
import contextvars
from collections.abc import Callable

import keras
import tensorflow as tf

from albert_tf.layers.activations import activate, get_activation

# The dense weights already cast to the compute dtype in the forward pass now running, by
# variable, and whether the pass is a training step's (see weights_cast_once); None outside one.
_CAST_WEIGHTS = contextvars.ContextVar("albert_tf_cast_weights", default=None)


@contextlib.contextmanager
def weights_cast_once(training: bool = False):
  """Within it, a Dense whose float32 weights compute in another dtype (mixed_bfloat16,
  mixed_float16) casts each weight once and reuses the cast: ALBERT's shared block reads the same
  matrices once per layer, where a cast per read is 12 casts of every shared weight a forward
  pass (ALBERT-base). The values are the same.

  With `training`, each read still has its own gradient: the read's gradient is cast to float32
  (_shared_cast) before the reads' gradients are summed, in float32, exactly as with a cast per
  read; one shared cast's gradient would be their sum in the compute dtype.
  """
  token = _CAST_WEIGHTS.set(({}, training))
  try:
    yield
  finally:
    _CAST_WEIGHTS.reset(token)


@tf.custom_gradient
def _shared_cast(weight, cast):
  """`cast` (weight already cast to the compute dtype) as a read of `weight`: the gradient goes
  to `weight`, cast to its dtype, as tf.cast's gradient would; `cast` gets none."""

  def gradient(dy):
    return tf.cast(dy, weight.dtype), None

  return tf.identity(cast), gradient


def _read(layer, variable):
  """`variable` as `layer` computes with it, in its compute dtype: cast at this read, or once in
  weights_cast_once's scope."""
  # The layer's policy: a Dense's weights do not autocast (Dense.build), so that a training read
  # can take the float32 value.
  if layer.variable_dtype == layer.compute_dtype:
    return variable
  scope = _CAST_WEIGHTS.get()
  if scope is None:
    return tf.cast(variable, layer.compute_dtype)
  cache, training = scope
  if id(variable) not in cache:
    cache[id(variable)] = tf.cast(variable, layer.compute_dtype)
  if not training:
    return cache[id(variable)]
  return _shared_cast(tf.convert_to_tensor(variable), cache[id(variable)])


@tf.custom_gradient
def bias_add_bfloat16(y: tf.Tensor, bias: tf.Tensor):
  """tf.nn.bias_add(y, bias) for a bfloat16 training step, its bias gradient a reduce_sum of the
  upstream gradient over the rows.

  Why: TensorFlow's CPU BiasAddGrad sums bfloat16 in bfloat16, so its error grows with the rows
  summed (a training batch's thousands of tokens lose most of the gradient's digits);
  reduce_sum accumulates in float32 and rounds once (bfloat16's own rounding), and is faster
  besides (figures: docs/speed.md). float16's BiasAddGrad accumulates in float32 (its
  reduce_sum does not), so float16 keeps BiasAddGrad.
  The forward pass is the same BiasAdd, which grappler still fuses with the MatMul before it.

  Args:
    y: bfloat16 [N, units].
    bias: bfloat16 [units].

  Returns:
    y + bias, and its gradient function.
  """

  def gradient(dy):
    return dy, tf.reduce_sum(dy, axis=0)

  return tf.nn.bias_add(y, bias), gradient


# The original uses tf.contrib.layers.layer_norm, whose variance epsilon is 1e-12.
LAYER_NORM_EPSILON = 1e-12

# Added to attention logits of masked (padding) key positions, as the original.
ATTENTION_MASK_ADDER = -10000.0


def truncated_normal(stddev: float) -> keras.initializers.Initializer:
  """The original's `create_initializer`: a normal truncated at two standard deviations.

  Args:
    stddev: float. The standard deviation (a config's `initializer_range`).

  Returns:
    A `keras.initializers.TruncatedNormal`.
  """
  return keras.initializers.TruncatedNormal(stddev=stddev)


@keras.saving.register_keras_serializable(package="albert_tf")
class LayerNorm(keras.layers.LayerNormalization):
  """Keras's LayerNormalization over the last axis, computed in float32 in five elementwise
  passes over [B, T, H] instead of Keras's seven: (x - mean) * (rsqrt(var + eps) * gamma) + beta,
  the original's normalisation with its products in another order (as the GELU's), the
  difference a float32 rounding. Variables, config and dtype handling are Keras's.

  Call arguments:
    inputs: float tensor [..., H].

  Returns:
    Tensor of inputs' shape, in the layer's compute dtype.
  """

  def call(self, inputs):
    last_axis_only = list(self.axis) in ([-1], [len(inputs.shape) - 1])
    if not last_axis_only or self.rms_scaling or not (self.center and self.scale):
      return super().call(inputs)  # not a form layer_norm() builds
    x = tf.cast(inputs, tf.float32)
    mean = tf.reduce_mean(x, axis=-1, keepdims=True)
    centered = x - mean
    variance = tf.reduce_mean(tf.square(centered), axis=-1, keepdims=True)
    scale = tf.math.rsqrt(variance + self.epsilon) * tf.cast(self.gamma, tf.float32)
    return tf.cast(centered * scale + tf.cast(self.beta, tf.float32), self.compute_dtype)


def layer_norm(name: str) -> keras.layers.LayerNormalization:
  """LayerNorm over the last axis with the original's epsilon (variables gamma, beta).

  Args:
    name: str. The layer's name.

  Under a half-precision policy (a bfloat16 export's "bfloat16") its variables stay float32:
  Keras computes LayerNorm in float32 whatever the policy, so gamma and beta lose nothing to
  bfloat16 rounding; the layer takes and gives the policy's compute dtype.

  Returns:
    An unbuilt `keras.layers.LayerNormalization`.
  """
  policy = keras.mixed_precision.global_policy()
  dtype = (keras.DTypePolicy(f"mixed_{policy.compute_dtype}")
           if policy.variable_dtype in ("bfloat16", "float16") else None)
  return LayerNorm(axis=-1, epsilon=LAYER_NORM_EPSILON, name=name, dtype=dtype)


def attention_mask_adder(input_mask: tf.Tensor, dtype: tf.DType) -> tf.Tensor:
  """The additive attention bias of a padding mask.

  Args:
    input_mask: int or float tensor [B, T]: 1 for real tokens, 0 for padding.
    dtype: the dtype of the attention logits it is added to.

  Returns:
    `dtype` tensor [B, 1, 1, T]: 0 where attended, -10000 where masked, as the original.
  """
  # A reshape, not `[:, tf.newaxis, tf.newaxis, :]`: TFLite's builtin StridedSlice takes at
  # most one new axis, and the export must run without Flex ops (export.tflite).
  mask = tf.reshape(tf.cast(input_mask, dtype), [tf.shape(input_mask)[0], 1, 1, -1])
  return (1.0 - mask) * ATTENTION_MASK_ADDER


def packed_attention_mask_adder(sequence_ids: tf.Tensor, dtype: tf.DType) -> tf.Tensor:
  """The additive attention bias of packed rows: each token attends to its own sequence alone.

  Args:
    sequence_ids: int tensor [B, T]: k on the k-th packed sequence's tokens (k >= 1), 0 on
      padding (albert_tf.data.packing).
    dtype: the dtype of the attention logits it is added to.

  Returns:
    `dtype` tensor [B, 1, T, T]: 0 where query and key tokens are of the same sequence, -10000
    elsewhere (padding keys included), as attention_mask_adder's value.
  """
  keys = sequence_ids[:, tf.newaxis, :]  # [B, 1, T]
  attended = tf.logical_and(tf.equal(sequence_ids[:, :, tf.newaxis], keys), keys > 0)
  mask = tf.cast(attended, dtype)[:, tf.newaxis]  # [B, 1, T, T]
  return (1.0 - mask) * ATTENTION_MASK_ADDER


def join_name(prefix: str, name: str) -> str:
  """`prefix/name`, or `name` alone for an empty prefix (the classifier's top-level names)."""
  return f"{prefix}/{name}" if prefix else name


def layer_norm_variables(prefix: str, layer: keras.layers.LayerNormalization) -> dict:
  """The original names of a LayerNorm's variables.

  Args:
    prefix: str. The original scope of the LayerNorm, e.g. `bert/embeddings/LayerNorm`.
    layer: a built `keras.layers.LayerNormalization`.

  Returns:
    `{prefix/gamma: variable, prefix/beta: variable}`.
  """
  return {join_name(prefix, "gamma"): layer.gamma, join_name(prefix, "beta"): layer.beta}


@keras.saving.register_keras_serializable(package="albert_tf")
class Dense(keras.layers.Layer):
  """y = act(x @ kernel + bias) on the last axis, with the original's initializers.

  Variables: kernel [input_dim, units] (truncated normal), bias [units] (zeros; none with
  `use_bias=False`), named as the original's `tf.layers.dense`.

  Args:
    units: int. The output width.
    activation: str, callable or None. "gelu" (the original's tanh approximation), "relu",
      "tanh", "linear" or None (no activation), or a function.
    initializer_range: float. Standard deviation of the kernel's truncated-normal initializer.
    use_bias: bool. Whether to add a bias.
    **kwargs: passed to `keras.layers.Layer` (name, dtype, ...).

  Call arguments:
    x: float tensor [..., input_dim].
    training: bool. A training step's call (Keras passes the caller's): a half-precision GELU
      then runs in float32 (activations.activate), and a bfloat16 bias gradient sums in float32
      (bias_add_bfloat16).

  Returns:
    Float tensor [..., units].
  """

  def __init__(self, units: int, activation: str | Callable | None = None,
               initializer_range: float = 0.02, use_bias: bool = True, **kwargs):
    super().__init__(**kwargs)
    self.units = units
    self.use_bias = use_bias
    self.activation_name = activation
    self.activation = get_activation(activation)
    self.initializer_range = initializer_range

  def build(self, input_shape):
    input_dim = int(input_shape[-1])
    # autocast=False: _read casts them to the compute dtype itself, once a forward pass in the
    # shared block (weights_cast_once).
    self.kernel = self.add_weight(name="kernel", shape=(input_dim, self.units),
                                  initializer=truncated_normal(self.initializer_range),
                                  autocast=False)
    self.bias = (self.add_weight(name="bias", shape=(self.units,), initializer="zeros",
                                 autocast=False)
                 if self.use_bias else None)
    self.built = True

  def call(self, x, training=None):
    # One [N, input_dim] x [input_dim, units] MatMul then BiasAdd, N = the product of the
    # leading axes: the product tensordot computes, without its dynamic-shape bookkeeping (a
    # dozen small int32 ops per layer, most of what a short serving request runs besides the
    # matmuls), and in the MatMul + BiasAdd form that grappler's remapper fuses into one kernel.
    rank = x.shape.rank
    kernel = _read(self, self.kernel)
    y = tf.matmul(x if rank == 2 else tf.reshape(x, [-1, self.kernel.shape[0]]), kernel)
    if self.bias is not None:
      bias = _read(self, self.bias)
      # The custom gradient takes a tensor: where the weights are bfloat16 already (a bfloat16
      # policy), _read gives the variable itself.
      y = (bias_add_bfloat16(y, tf.cast(bias, y.dtype)) if training and y.dtype == tf.bfloat16
           else tf.nn.bias_add(y, bias))
    if rank != 2:
      y = tf.reshape(y, tf.concat([tf.shape(x)[:-1], [self.units]], 0))
    return activate(self.activation, y, bool(training)) if self.activation is not None else y

  def compute_output_shape(self, input_shape):
    return tuple(input_shape)[:-1] + (self.units,)

  def original_variables(self, prefix: str) -> dict:
    """`{prefix/kernel: kernel, prefix/bias: bias}` (no bias entry with `use_bias=False`)."""
    names = {join_name(prefix, "kernel"): self.kernel}
    if self.bias is not None:
      names[join_name(prefix, "bias")] = self.bias
    return names

  def get_config(self):
    config = super().get_config()
    config.update(units=self.units, activation=self.activation_name,
                  initializer_range=self.initializer_range, use_bias=self.use_bias)
    return config
