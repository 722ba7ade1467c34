"""The attention + FFN block and ALBERT's cross-layer shared transformer."""

import keras

from albert_tf.layers.attention import AlbertAttention
from albert_tf.layers.common import Dense, layer_norm


def group_index(layer_index, num_hidden_layers, num_hidden_groups):
  """The parameter group that layer `layer_index` uses, with the original's float arithmetic."""
  return int(layer_index / num_hidden_layers * num_hidden_groups)


class AttentionFFNBlock(keras.layers.Layer):
  """One post-LayerNorm transformer block (the original's `attention_ffn_block`).

  Call with `x` float [B, T, H] and `mask_adder` [B, 1, 1, T]; returns [B, T, H].
  """

  def __init__(self, hidden_size, num_attention_heads, intermediate_size, hidden_act="gelu",
               initializer_range=0.02, hidden_dropout_rate=0.0, attention_dropout_rate=0.0,
               **kwargs):
    super().__init__(**kwargs)
    self.hidden_size = hidden_size
    self.num_attention_heads = num_attention_heads
    self.intermediate_size = intermediate_size
    self.hidden_act = hidden_act
    self.initializer_range = initializer_range
    self.hidden_dropout_rate = hidden_dropout_rate
    self.attention_dropout_rate = attention_dropout_rate
    self.attention = AlbertAttention(hidden_size, num_attention_heads, initializer_range,
                                     attention_dropout_rate, name="attention")
    self.attention_layer_norm = layer_norm("LayerNorm")
    self.intermediate = Dense(intermediate_size, activation=hidden_act,
                              initializer_range=initializer_range, name="intermediate")
    self.ffn_output = Dense(hidden_size, initializer_range=initializer_range, name="ffn_output")
    self.ffn_layer_norm = layer_norm("LayerNorm_1")
    self.attention_output_dropout = keras.layers.Dropout(hidden_dropout_rate)
    self.ffn_output_dropout = keras.layers.Dropout(hidden_dropout_rate)

  def build(self, input_shape=None):
    hidden = (None, None, self.hidden_size)
    self.attention.build(hidden)
    self.attention_layer_norm.build(hidden)
    self.intermediate.build(hidden)
    self.ffn_output.build((None, None, self.intermediate_size))
    self.ffn_layer_norm.build(hidden)
    self.built = True

  def call(self, x, mask_adder, training=False):
    attention = self.attention(x, mask_adder, training=training)
    attention = self.attention_output_dropout(attention, training=training)
    attention = self.attention_layer_norm(attention + x)
    ffn = self.ffn_output(self.intermediate(attention))
    ffn = self.ffn_output_dropout(ffn, training=training)
    return self.ffn_layer_norm(ffn + attention)

  def get_config(self):
    config = super().get_config()
    config.update(hidden_size=self.hidden_size, num_attention_heads=self.num_attention_heads,
                  intermediate_size=self.intermediate_size, hidden_act=self.hidden_act,
                  initializer_range=self.initializer_range,
                  hidden_dropout_rate=self.hidden_dropout_rate,
                  attention_dropout_rate=self.attention_dropout_rate)
    return config


class SharedTransformer(keras.layers.Layer):
  """ALBERT's encoder stack with cross-layer parameter sharing.

  Holds `num_hidden_groups` groups of `inner_group_num` blocks (`self.groups[g][i]`). Layer l of
  `num_hidden_layers` runs the blocks of group `group_index(l, ...)` in order. Call with `x`
  [B, T, H] and `mask_adder` [B, 1, 1, T]; returns the list of every block output, each [B, T, H]
  (num_hidden_layers x inner_group_num entries).
  """

  def __init__(self, num_hidden_layers, num_hidden_groups, inner_group_num, hidden_size,
               num_attention_heads, intermediate_size, hidden_act="gelu",
               initializer_range=0.02, hidden_dropout_rate=0.0, attention_dropout_rate=0.0,
               **kwargs):
    super().__init__(**kwargs)
    self.num_hidden_layers = num_hidden_layers
    self.num_hidden_groups = num_hidden_groups
    self.inner_group_num = inner_group_num
    self.block_config = dict(
        hidden_size=hidden_size, num_attention_heads=num_attention_heads,
        intermediate_size=intermediate_size, hidden_act=hidden_act,
        initializer_range=initializer_range, hidden_dropout_rate=hidden_dropout_rate,
        attention_dropout_rate=attention_dropout_rate)
    self.blocks = []
    for g in range(num_hidden_groups):
      for i in range(inner_group_num):
        block = AttentionFFNBlock(**self.block_config, name=f"group_{g}_inner_group_{i}")
        # An attribute each: tf.train.Checkpoint sees a Keras 3 layer's attributes, not layers
        # held in lists.
        setattr(self, f"group_{g}_inner_group_{i}", block)
        self.blocks.append(block)

  @property
  def groups(self):
    """groups[g][i]: block i of parameter group g."""
    n = self.inner_group_num
    return [self.blocks[g * n:(g + 1) * n] for g in range(self.num_hidden_groups)]

  def build(self, input_shape=None):
    for block in self.blocks:
      block.build((None, None, self.block_config["hidden_size"]))
    self.built = True

  def call(self, x, mask_adder, training=False):
    outputs = []
    for layer in range(self.num_hidden_layers):
      group = self.groups[group_index(layer, self.num_hidden_layers, self.num_hidden_groups)]
      for block in group:
        x = block(x, mask_adder, training=training)
        outputs.append(x)
    return outputs

  def get_config(self):
    config = super().get_config()
    config.update(num_hidden_layers=self.num_hidden_layers,
                  num_hidden_groups=self.num_hidden_groups,
                  inner_group_num=self.inner_group_num, **self.block_config)
    return config
