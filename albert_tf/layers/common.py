"""Small building blocks shared by the ALBERT layers: the original's initializer, LayerNorm and
dense arithmetic, each defined once."""

import keras
import tensorflow as tf

from albert_tf.layers.activations import get_activation

# The original uses tf.contrib.layers.layer_norm, whose variance epsilon is 1e-12.
LAYER_NORM_EPSILON = 1e-12

# Added to attention logits of masked (padding) key positions, as the original.
ATTENTION_MASK_ADDER = -10000.0


def truncated_normal(stddev):
  """The original's `create_initializer`: a normal truncated at two standard deviations."""
  return keras.initializers.TruncatedNormal(stddev=stddev)


def layer_norm(name):
  """LayerNorm over the last axis with the original's epsilon (gamma, beta)."""
  return keras.layers.LayerNormalization(axis=-1, epsilon=LAYER_NORM_EPSILON, name=name)


def attention_mask_adder(input_mask, dtype):
  """[B, T] 1/0 mask -> [B, 1, 1, T] additive bias: 0 where attended, -10000 where masked."""
  mask = tf.cast(input_mask, dtype)[:, tf.newaxis, tf.newaxis, :]
  return (1.0 - mask) * ATTENTION_MASK_ADDER


class Dense(keras.layers.Layer):
  """y = act(x @ kernel + bias) on the last axis, with the original's initializers.

  Shapes: x [..., input_dim] -> y [..., units]; kernel [input_dim, units], bias [units] (none
  with use_bias=False).
  """

  def __init__(self, units, activation=None, initializer_range=0.02, use_bias=True, **kwargs):
    super().__init__(**kwargs)
    self.units = units
    self.use_bias = use_bias
    self.activation_name = activation
    self.activation = get_activation(activation)
    self.initializer_range = initializer_range

  def build(self, input_shape):
    input_dim = int(input_shape[-1])
    self.kernel = self.add_weight(name="kernel", shape=(input_dim, self.units),
                                  initializer=truncated_normal(self.initializer_range))
    self.bias = (self.add_weight(name="bias", shape=(self.units,), initializer="zeros")
                 if self.use_bias else None)
    self.built = True

  def call(self, x):
    y = tf.tensordot(x, self.kernel, axes=[[x.shape.rank - 1], [0]])
    if self.bias is not None:
      y = y + self.bias
    return self.activation(y) if self.activation is not None else y

  def get_config(self):
    config = super().get_config()
    config.update(units=self.units, activation=self.activation_name,
                  initializer_range=self.initializer_range, use_bias=self.use_bias)
    return config
