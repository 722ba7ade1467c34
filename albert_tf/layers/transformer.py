"""The attention + FFN block and ALBERT's cross-layer shared transformer."""

import contextlib
import logging

import keras
import tensorflow as tf
# stop_recording: the forward pass of a recomputed block is left off the outer tape (as
# tf.recompute_grad does), which would otherwise hold its tensors in eager mode.
from tensorflow.python.eager import record

from albert_tf.core import errors
from albert_tf.layers.attention import AlbertAttention
from albert_tf.layers.common import Dense, layer_norm, layer_norm_variables, weights_cast_once

logger = logging.getLogger("albert_tf")


# A block's two sub-blocks: self-attention with its output dense and LayerNorm; the FFN
# (intermediate, output dense) with LayerNorm_1.
SUB_BLOCKS = ("attention", "ffn")
# parameter_sharing -> the sub-block shared by every layer of a group, the other one per layer.
# all-shared shares both (whole blocks); not-shared shares none (one group per layer).
_SHARED_PART = {"shared-attention": "attention", "shared-FFN": "ffn"}


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


def _seed_generators(block):
  """The Keras seed generators of a block's dropout layers (a shared part's included), each
  once, in layer order."""
  found = {}
  for layer in block._flatten_layers():
    for generator in getattr(layer, "_seed_generators", []):
      found.setdefault(id(generator), generator)
  return list(found.values())


@contextlib.contextmanager
def _seeds_of(generators, drawn, offset=None):
  """Within it, the dropout seeds drawn from `generators` are recorded or replayed.

  Keras's Dropout draws its seed from its generator (SeedGenerator.next), which advances the
  generator's state variable: a second run of a block would drop other units. Recording
  (offset None): each generator's draws go on as ever and are appended to drawn[i]. Replaying:
  generator i's draws return drawn[i]'s seeds in order, each plus `offset` (a zero), and leave
  the state alone, so that the recomputation drops exactly what the forward pass dropped.

  The generators' `next` is replaced on the instances for the scope's duration, which runs one
  block's call and nothing else: no other draw can see it (MirroredStrategy's replica threads
  take turns, switching only at a merge_call).

  Args:
    generators: list of keras.random.SeedGenerator.
    drawn: list of lists of int seed tensors [2], one list per generator.
    offset: None, or a float scalar zero tensor added to each replayed seed.
  """
  def recording(generator, seeds):
    def draw(ordered=True):
      seed = type(generator).next(generator, ordered)
      seeds.append(seed)
      return seed
    return draw

  def replaying(generator, seeds):
    remaining = iter(seeds)

    def draw(ordered=True):
      del ordered
      seed = next(remaining, None)
      if seed is None:
        raise RuntimeError(f"{generator.name}: the recomputed block drew more dropout seeds "
                           "than its forward pass (albert_tf/layers/transformer.py)")
      return seed + tf.cast(offset, seed.dtype)
    return draw

  for generator, seeds in zip(generators, drawn):
    generator.next = recording(generator, seeds) if offset is None else replaying(generator, seeds)
  try:
    yield
  finally:
    for generator in generators:
      del generator.next


def _recomputed_block(block, x, mask_adder):
  """block(x, mask_adder, training=True) whose backward pass recomputes the block's activations.

  The forward pass keeps only what the recomputation needs: x, mask_adder and the dropout seeds
  it drew (see _seeds_of), so a layer's attention scores, FFN activations and dropout masks are
  freed once the next layer has them. The gradient runs the block again on the same inputs,
  weights and seeds under a tape of its own: the same values and gradients as the plain block.

  Args:
    block: an AttentionFFNBlock.
    x: float tensor [B, T, H].
    mask_adder: float tensor added to the attention logits ([B, 1, 1, T], or [B, 1, T, T] of
      packed rows); no gradient flows to it (a constant of the input mask).

  Returns:
    Float tensor [B, T, H].
  """
  generators = _seed_generators(block)
  drawn = [[] for _ in generators]

  @tf.custom_gradient
  def recomputed(x, mask_adder):
    with record.stop_recording(), _seeds_of(generators, drawn):
      y = block(x, mask_adder, training=True)

    def gradient(dy, variables=None):
      # A zero computed from dy (as tf.recompute_grad's): the recomputation's inputs depend on
      # the incoming gradient, so that it runs in the backward pass, one layer at a time, and is
      # not merged back into the forward pass's identical ops by Grappler's or XLA's
      # common-subexpression elimination (XLA ignores control dependencies). A bool of dy equals
      # itself even where dy is NaN.
      nonzero = tf.cast(tf.reduce_max(tf.reshape(dy, [-1])[:1]), tf.bool)
      zero = tf.where(tf.equal(nonzero, nonzero), 0.0, float("nan"))
      x_again = x + tf.cast(zero, x.dtype)
      variables = list(variables or ())
      watched = [v for v in variables if v.trainable and v.dtype.is_floating]
      with tf.GradientTape() as tape:
        tape.watch(x_again)
        tape.watch(watched)
        # weights_cast_once: a half-precision weight's gradient is cast to float32 per read,
        # as in the forward pass (see weights_cast_once).
        with _seeds_of(generators, drawn, offset=zero), weights_cast_once(training=True):
          y_again = block(x_again, mask_adder, training=True)
      grads = tape.gradient(y_again, [x_again] + watched, output_gradients=dy)
      by_variable = {id(v): g for v, g in zip(watched, grads[1:])}
      return (grads[0], None), [by_variable.get(id(v)) for v in variables]

    return y, gradient

  return recomputed(x, mask_adder)


@keras.saving.register_keras_serializable(package="albert_tf")
class AttentionFFNBlock(keras.layers.Layer):
  """One post-LayerNorm transformer block (the original's `attention_ffn_block`):
  x' = LN(x + dropout(attention(x))), y = LN(x' + dropout(ffn_output(act(intermediate(x'))))).

  Variables as the original's `attention_1/...`, `LayerNorm`, `ffn_1/intermediate/dense`,
  `ffn_1/intermediate/output/dense` and `LayerNorm_1`. A block may run another block's attention
  or FFN sub-block instead of its own (`shares`, `shared_parts`): the paper's shared-attention and
  shared-FFN models. Such a block is built by SharedTransformer, which recreates the sharing from
  its own config; the block's get_config describes a block that owns both parts.

  Args:
    hidden_size: int. H.
    num_attention_heads: int. The number of attention heads (H must be a multiple of it).
    intermediate_size: int. The FFN's inner width.
    hidden_act: str. The FFN's activation: "gelu", "relu", "tanh" or "linear".
    initializer_range: float. Standard deviation of the kernels' truncated-normal initializer.
    hidden_dropout_rate: float. Dropout on the attention and FFN outputs (training only).
    attention_dropout_rate: float. Dropout on the attention probabilities (training only).
    shares: AttentionFFNBlock or None. The block whose `shared_parts` this one runs.
    shared_parts: tuple of SUB_BLOCKS names ("attention", "ffn") taken from `shares`.
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
               shares: "AttentionFFNBlock | None" = None, shared_parts: tuple = (), **kwargs):
    super().__init__(**kwargs)
    self.hidden_size = hidden_size
    self.num_attention_heads = num_attention_heads
    self.intermediate_size = intermediate_size
    self.hidden_act = hidden_act
    self.initializer_range = initializer_range
    self.hidden_dropout_rate = hidden_dropout_rate
    self.attention_dropout_rate = attention_dropout_rate
    unknown = set(shared_parts) - set(SUB_BLOCKS)
    if unknown or (shared_parts and shares is None):
      raise ValueError(f"AttentionFFNBlock: shared_parts {tuple(shared_parts)} must name parts "
                       f"of {SUB_BLOCKS} and come with the block `shares` that owns them")
    # The same layer objects as `shares` for a shared part: one set of variables, run by both
    # blocks (Keras and tf.train.Checkpoint track a layer held twice once).
    if "attention" in shared_parts:
      self.attention = shares.attention
      self.attention_layer_norm = shares.attention_layer_norm
    else:
      self.attention = AlbertAttention(hidden_size, num_attention_heads, initializer_range,
                                       attention_dropout_rate, name="attention")
      self.attention_layer_norm = layer_norm("LayerNorm")
    if "ffn" in shared_parts:
      self.intermediate = shares.intermediate
      self.ffn_output = shares.ffn_output
      self.ffn_layer_norm = shares.ffn_layer_norm
    else:
      self.intermediate = Dense(intermediate_size, activation=hidden_act,
                                initializer_range=initializer_range, name="intermediate")
      self.ffn_output = Dense(hidden_size, initializer_range=initializer_range,
                              name="ffn_output")
      self.ffn_layer_norm = layer_norm("LayerNorm_1")
    self.attention_output_dropout = keras.layers.Dropout(hidden_dropout_rate)
    self.ffn_output_dropout = keras.layers.Dropout(hidden_dropout_rate)

  def build(self, input_shape=None):
    hidden = (None, None, self.hidden_size)
    shapes = ((self.attention, hidden), (self.attention_layer_norm, hidden),
              (self.intermediate, hidden), (self.ffn_output, (None, None, self.intermediate_size)),
              (self.ffn_layer_norm, hidden))
    for layer, shape in shapes:
      if not layer.built:  # a shared part is built by its owner; building again would remake it
        layer.build(shape)
    self.built = True

  def call(self, x, mask_adder, training=False):
    attention = self.attention(x, mask_adder, training=training)
    attention = self.attention_output_dropout(attention, training=training)
    attention = self.attention_layer_norm(attention + x)
    # The FFN on [B*T, H] rows, reshaped back once (see Dense: fewer shape ops per layer).
    rows = tf.reshape(attention, [-1, self.hidden_size])
    ffn = tf.reshape(self.ffn_output(self.intermediate(rows)), tf.shape(attention))
    ffn = self.ffn_output_dropout(ffn, training=training)
    return self.ffn_layer_norm(ffn + attention)

  def compute_output_shape(self, input_shape):
    return tuple(input_shape)[:-1] + (self.hidden_size,)

  def original_variables(self, prefix: str) -> dict:
    """{original name: variable} under `prefix` (e.g.
    `bert/encoder/transformer/group_0/inner_group_0`): both sub-blocks'."""
    names = self.sub_block_variables("attention", prefix)
    names.update(self.sub_block_variables("ffn", prefix))
    return names

  def sub_block_variables(self, part: str, prefix: str) -> dict:
    """{original name: variable} of one sub-block under `prefix`: "attention" (`attention_1/...`,
    `LayerNorm`) or "ffn" (`ffn_1/...`, `LayerNorm_1`)."""
    if part == "attention":
      names = self.attention.original_variables(f"{prefix}/attention_1")
      names.update(layer_norm_variables(f"{prefix}/LayerNorm", self.attention_layer_norm))
      return names
    names = self.intermediate.original_variables(f"{prefix}/ffn_1/intermediate/dense")
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

  Layer l of `num_hidden_layers` belongs to group `group_index(l, num_hidden_layers, groups)`
  and runs `inner_group_num` blocks. What the layers of a group share (`parameter_sharing`, the
  paper's Table 4):
  - "all-shared" (the original's only model): whole blocks. The transformer holds
    `num_hidden_groups` groups of blocks (`self.groups[g][i]`, also the attribute
    `group_{g}_inner_group_{i}`).
  - "not-shared": nothing, built as num_hidden_groups = num_hidden_layers (one group per layer):
    the same variables, so either model loads the other's checkpoints.
  - "shared-attention" / "shared-FFN": that sub-block is shared by the group's layers, the other
    is per layer. Every layer has its blocks (attributes `layer_{l}_inner_group_{i}`); the first
    layer's blocks of each group own the shared sub-block (`self.groups[g]`), the later layers'
    run it.

  Args:
    num_hidden_layers: int. The number of layers run.
    num_hidden_groups: int. The number of parameter groups, 1 <= it <= num_hidden_layers
      (ignored when not-shared).
    inner_group_num: int. The number of blocks in each layer.
    hidden_size, num_attention_heads, intermediate_size, hidden_act, initializer_range,
    hidden_dropout_rate, attention_dropout_rate: each block's (see `AttentionFFNBlock`).
    parameter_sharing: str. One of config.PARAMETER_SHARING.
    recompute_activations: bool. In training, keep only each block's input [B, T, H] for the
      backward pass, which recomputes the block's activations from it: the same gradients for
      far less memory, at the cost of running the blocks' forward pass twice. Inference is the
      same either way (see set_recompute_activations).
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
               parameter_sharing: str = "all-shared", recompute_activations: bool = False,
               **kwargs):
    super().__init__(**kwargs)
    if parameter_sharing not in ("all-shared", "not-shared", *_SHARED_PART):
      raise errors.ConfigError(
          f"SharedTransformer: unknown parameter_sharing {parameter_sharing!r}")
    self.num_hidden_layers = num_hidden_layers
    self.num_hidden_groups = num_hidden_groups
    self.inner_group_num = inner_group_num
    self.parameter_sharing = parameter_sharing
    self.recompute_activations = bool(recompute_activations)
    self.num_parameter_groups = (num_hidden_layers if parameter_sharing == "not-shared"
                                 else num_hidden_groups)
    self.block_config = dict(
        hidden_size=hidden_size, num_attention_heads=num_attention_heads,
        intermediate_size=intermediate_size, hidden_act=hidden_act,
        initializer_range=initializer_range, hidden_dropout_rate=hidden_dropout_rate,
        attention_dropout_rate=attention_dropout_rate)
    # layer_blocks[l]: the blocks layer l runs, in order.
    self.layer_blocks = []
    shared_part = _SHARED_PART.get(parameter_sharing)
    firsts = {}  # group -> its first layer's blocks, which own the shared sub-block
    for layer in range(num_hidden_layers):
      g = self.group_of(layer)
      if shared_part is None and g in firsts:
        self.layer_blocks.append(firsts[g])  # whole blocks shared
        continue
      blocks = []
      for i in range(inner_group_num):
        owner = firsts[g][i] if g in firsts else None
        name = (f"group_{g}_inner_group_{i}" if shared_part is None
                else f"layer_{layer}_inner_group_{i}")
        block = AttentionFFNBlock(**self.block_config, name=name, shares=owner,
                                  shared_parts=(shared_part,) if owner else ())
        # An attribute each: tf.train.Checkpoint sees a Keras 3 layer's attributes, not layers
        # held in lists.
        setattr(self, name, block)
        blocks.append(block)
      firsts.setdefault(g, blocks)
      self.layer_blocks.append(blocks)
    self.groups = [firsts[g] for g in range(self.num_parameter_groups)]

  def group_of(self, layer: int) -> int:
    """The parameter group of layer `layer` (see group_index)."""
    return group_index(layer, self.num_hidden_layers, self.num_parameter_groups)

  @property
  def blocks(self) -> list:
    """Every distinct block, layer by layer (a block shared by several layers once)."""
    seen = {}
    for blocks in self.layer_blocks:
      for block in blocks:
        seen.setdefault(id(block), block)
    return list(seen.values())

  def build(self, input_shape=None):
    for block in self.blocks:
      block.build((None, None, self.block_config["hidden_size"]))
    self.built = True

  def call(self, x, mask_adder, training=False):
    outputs = []
    # Only a training pass has a backward pass to recompute for.
    recompute = self.recompute_activations and bool(training)
    # Each shared weight is cast once a forward pass, not once a layer (see weights_cast_once).
    with weights_cast_once(training=bool(training)):
      for blocks in self.layer_blocks:
        for block in blocks:
          x = (_recomputed_block(block, x, mask_adder) if recompute
               else block(x, mask_adder, training=training))
          outputs.append(x)
    return outputs

  def compute_output_shape(self, input_shape):
    shape = tuple(input_shape)[:-1] + (self.block_config["hidden_size"],)
    return [shape] * (self.num_hidden_layers * self.inner_group_num)

  def original_variables(self, prefix: str) -> dict:
    """{original name: variable} under `prefix` (the original's `bert/encoder/transformer`):
    `group_{g}/inner_group_{i}/...` for what group g shares, and
    `group_{g}/inner_group_{i}/layer_{l}/...` (l counting all layers from 0) for a sub-block of
    layer l's own (shared-attention: its `ffn_1/...` and `LayerNorm_1`; shared-FFN: its
    `attention_1/...` and `LayerNorm`)."""
    names = {}
    shared_part = _SHARED_PART.get(self.parameter_sharing)
    for layer, blocks in enumerate(self.layer_blocks):
      g = self.group_of(layer)
      for i, block in enumerate(blocks):
        group_prefix = f"{prefix}/group_{g}/inner_group_{i}"
        if shared_part is None:
          names.update(block.original_variables(group_prefix))
          continue
        for part in SUB_BLOCKS:
          names.update(block.sub_block_variables(
              part, group_prefix if part == shared_part else f"{group_prefix}/layer_{layer}"))
    return names

  def get_config(self):
    config = super().get_config()
    config.update(num_hidden_layers=self.num_hidden_layers,
                  num_hidden_groups=self.num_hidden_groups,
                  inner_group_num=self.inner_group_num,
                  parameter_sharing=self.parameter_sharing,
                  recompute_activations=self.recompute_activations, **self.block_config)
    return config


def set_recompute_activations(model: keras.layers.Layer, on: bool) -> int:
  """Sets `recompute_activations` on every SharedTransformer in `model` (itself included): its
  training steps then keep only each transformer block's input [B, T, H] and recompute the
  block's activations in the backward pass (the same gradients, much less memory, about a third
  more compute per step). Set it before the model's training step is traced.

  Args:
    model: a Keras layer or model (an AlbertPretrainer, a task model, an AlbertModel).
    on: bool. Whether to recompute.

  Returns:
    int: the number of SharedTransformer layers set (0: the model has none).
  """
  count = 0
  for layer in model._flatten_layers(include_self=True):
    if isinstance(layer, SharedTransformer):
      layer.recompute_activations = bool(on)
      count += 1
  if on and count:
    logger.info("training recomputes each transformer block's activations in the backward pass")
  return count
