"""The attention + FFN block and ALBERT's cross-layer shared transformer."""

import keras

from albert_tf.layers.attention import AlbertAttention
from albert_tf.layers.common import Dense, layer_norm, layer_norm_variables


def group_index(layer_index: int, num_hidden_layers: int, num_hidden_groups: int) -> int:
  """The parameter group that a layer uses, with the original's float arithmetic.

  Args:
    layer_index: int. The layer, 0 <= layer_index < num_hidden_layers.
    num_hidden_layers: int. The number of layers.
    num_hidden_groups: int. The number of parameter groups.

  Returns:
    int(layer_index / num_hidden_layers * num_hidden_groups).
  """
  return int(layer_index / num_hidden_layers * num_hidden_groups)


@keras.saving.register_keras_serializable(package="albert_tf")
class AttentionFFNBlock(keras.layers.Layer):
  """One post-LayerNorm transformer block (the original's `attention_ffn_block`):
  x' = LN(x + dropout(attention(x))), y = LN(x' + dropout(ffn_output(act(intermediate(x'))))).

  Variables as the original's `attention_1/...`, `LayerNorm`, `ffn_1/intermediate/dense`,
  `ffn_1/intermediate/output/dense` and `LayerNorm_1`.

  Args:
    hidden_size: int. H.
    num_attention_heads: int. The number of attention heads (H must be a multiple of it).
    intermediate_size: int. The FFN's inner width.
    hidden_act: str. The FFN's activation: "gelu", "relu", "tanh" or "linear".
    initializer_range: float. Standard deviation of the kernels' truncated-normal initializer.
    hidden_dropout_rate: float. Dropout on the attention and FFN outputs (training only).
    attention_dropout_rate: float. Dropout on the attention probabilities (training only).
    **kwargs: passed to `keras.layers.Layer`.

  Call arguments:
    x: float tensor [B, T, H].
    mask_adder: float tensor [B, 1, 1, T] (see `attention_mask_adder`).
    training: bool. Applies dropout when True.

  Returns:
    Float tensor [B, T, H].
  """

  def __init__(self, hidden_size: int, num_attention_heads: int, intermediate_size: int,
               hidden_act: str = "gelu", initializer_range: float = 0.02,
               hidden_dropout_rate: float = 0.0, attention_dropout_rate: float = 0.0,
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

  def compute_output_shape(self, input_shape):
    return tuple(input_shape)[:-1] + (self.hidden_size,)

  def original_variables(self, prefix: str) -> dict:
    """{original name: variable} under `prefix` (e.g.
    `bert/encoder/transformer/group_0/inner_group_0`)."""
    names = self.attention.original_variables(f"{prefix}/attention_1")
    names.update(layer_norm_variables(f"{prefix}/LayerNorm", self.attention_layer_norm))
    names.update(self.intermediate.original_variables(f"{prefix}/ffn_1/intermediate/dense"))
    names.update(self.ffn_output.original_variables(f"{prefix}/ffn_1/intermediate/output/dense"))
    names.update(layer_norm_variables(f"{prefix}/LayerNorm_1", self.ffn_layer_norm))
    return names

  def get_config(self):
    config = super().get_config()
    config.update(hidden_size=self.hidden_size, num_attention_heads=self.num_attention_heads,
                  intermediate_size=self.intermediate_size, hidden_act=self.hidden_act,
                  initializer_range=self.initializer_range,
                  hidden_dropout_rate=self.hidden_dropout_rate,
                  attention_dropout_rate=self.attention_dropout_rate)
    return config


@keras.saving.register_keras_serializable(package="albert_tf")
class SharedTransformer(keras.layers.Layer):
  """ALBERT's encoder stack with cross-layer parameter sharing.

  Holds `num_hidden_groups` groups of `inner_group_num` blocks (`self.groups[g][i]`, also the
  attribute `group_{g}_inner_group_{i}`). Layer l of `num_hidden_layers` runs the blocks of group
  `group_index(l, num_hidden_layers, num_hidden_groups)` in order.

  Args:
    num_hidden_layers: int. The number of layers run.
    num_hidden_groups: int. The number of parameter groups, 1 <= it <= num_hidden_layers.
    inner_group_num: int. The number of blocks in each group.
    hidden_size, num_attention_heads, intermediate_size, hidden_act, initializer_range,
    hidden_dropout_rate, attention_dropout_rate: each block's (see `AttentionFFNBlock`).
    **kwargs: passed to `keras.layers.Layer`.

  Call arguments:
    x: float tensor [B, T, H].
    mask_adder: float tensor [B, 1, 1, T] (see `attention_mask_adder`).
    training: bool. Applies dropout when True.

  Returns:
    A list of every block's output, each float [B, T, H] (num_hidden_layers x inner_group_num
    entries; the last is the encoder's sequence output).
  """

  def __init__(self, num_hidden_layers: int, num_hidden_groups: int, inner_group_num: int,
               hidden_size: int, num_attention_heads: int, intermediate_size: int,
               hidden_act: str = "gelu", initializer_range: float = 0.02,
               hidden_dropout_rate: float = 0.0, attention_dropout_rate: float = 0.0,
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
  def groups(self) -> list:
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

  def compute_output_shape(self, input_shape):
    shape = tuple(input_shape)[:-1] + (self.block_config["hidden_size"],)
    return [shape] * (self.num_hidden_layers * self.inner_group_num)

  def original_variables(self, prefix: str) -> dict:
    """{original name: variable} under `prefix` (the original's `bert/encoder/transformer`):
    `group_{g}/inner_group_{i}/...` for each block."""
    names = {}
    for g, group in enumerate(self.groups):
      for i, block in enumerate(group):
        names.update(block.original_variables(f"{prefix}/group_{g}/inner_group_{i}"))
    return names

  def get_config(self):
    config = super().get_config()
    config.update(num_hidden_layers=self.num_hidden_layers,
                  num_hidden_groups=self.num_hidden_groups,
                  inner_group_num=self.inner_group_num, **self.block_config)
    return config
