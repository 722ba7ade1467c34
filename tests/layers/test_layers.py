"""Each layer alone against the NumPy reference of the original arithmetic."""

import keras
import numpy as np
import pytest
import tensorflow as tf

import numpy_reference as ref
from albert_tf import layers
from albert_tf.tasks.squad import heads as squad_heads
from albert_tf.training.precision import policy_scope


def test_gelu_is_the_tanh_approximation():
  x = np.linspace(-6, 6, 101).astype(np.float32)
  np.testing.assert_allclose(layers.gelu(tf.constant(x)).numpy(), ref.gelu(x), atol=1e-6)
  # Differs from the exact erf GELU, which the original does not use.
  exact = tf.nn.gelu(tf.constant(x), approximate=False).numpy()
  assert np.abs(exact - ref.gelu(x)).max() > 1e-4


def test_layer_norm_matches_the_reference_and_keras():
  rng = np.random.default_rng(5)
  x = rng.normal(size=(3, 7, 64)).astype(np.float32) * 3 + 1
  ln = layers.LayerNorm(epsilon=1e-12)
  ln.build(x.shape)
  ln.gamma.assign(rng.normal(size=64).astype(np.float32))
  ln.beta.assign(rng.normal(size=64).astype(np.float32))
  got = ln(tf.constant(x)).numpy()
  expected = ref.layer_norm(x.astype(np.float64), ln.gamma.numpy(), ln.beta.numpy())
  np.testing.assert_allclose(got, expected, atol=2e-6)
  # Keras's arithmetic (the original's order of products) agrees to float32 rounding.
  keras_ln = keras.layers.LayerNormalization(epsilon=1e-12)
  keras_ln.build(x.shape)
  keras_ln.set_weights(ln.get_weights())
  np.testing.assert_allclose(got, keras_ln(tf.constant(x)).numpy(), atol=2e-6)
  # Under a bfloat16 policy: float32 variables and arithmetic, the policy's dtype out.
  with policy_scope("mixed_bfloat16"):
    half = layers.LayerNorm(epsilon=1e-12)
    half.build(x.shape)
  half.set_weights(ln.get_weights())
  out = half(tf.constant(x, tf.bfloat16))
  assert out.dtype == tf.bfloat16 and half.gamma.dtype == "float32"
  np.testing.assert_allclose(tf.cast(out, tf.float32).numpy(), expected, atol=0.05, rtol=0.01)


def test_half_precision_training_gelu_computes_in_float32():
  x = np.linspace(-6, 6, 241).astype(np.float32)
  half = tf.constant(x, tf.bfloat16)
  exact = tf.cast(half, tf.float64).numpy()  # the bf16 inputs, exactly
  with tf.GradientTape() as tape:
    tape.watch(half)
    y = layers.activations.gelu_in_float32(half)
  slope = tape.gradient(y, half)
  assert y.dtype == tf.bfloat16 and slope.dtype == tf.bfloat16
  # One rounding to bfloat16 (8 bits) from the float64 values: within half a bf16 ulp (atol:
  # below x = -4.5, 1 + tanh cancels to float32's resolution, as in the original's float32).
  np.testing.assert_allclose(tf.cast(y, tf.float64).numpy(), ref.gelu(exact), rtol=2 ** -8,
                             atol=1e-5)
  t = np.tanh(np.sqrt(2 / np.pi) * (exact + 0.044715 * exact ** 3))
  derivative = 0.5 * (1 + t) + 0.5 * exact * (1 - t * t) * np.sqrt(2 / np.pi) * (
      1 + 3 * 0.044715 * exact ** 2)
  np.testing.assert_allclose(tf.cast(slope, tf.float64).numpy(), derivative, rtol=2 ** -8,
                             atol=1e-5)
  # Float32 keeps TensorFlow's own GELU and its autodiff gradient, training or not.
  f32 = tf.constant(x)
  np.testing.assert_array_equal(layers.activations.activate(layers.gelu, f32, training=True),
                                layers.gelu(f32))


def test_a_bf16_training_step_reaches_the_float32_gelu(monkeypatch):
  calls = []
  real = layers.activations.gelu_in_float32
  monkeypatch.setattr(layers.activations, "gelu_in_float32",
                      lambda x: calls.append(x.dtype) or real(x))
  with policy_scope("mixed_bfloat16"):
    block = layers.SharedTransformer(2, 1, 1, 8, 2, 16)
  x = tf.constant(np.random.default_rng(3).normal(size=(2, 5, 8)), tf.float32)
  adder = layers.attention_mask_adder(tf.ones((2, 5), tf.int32), tf.bfloat16)
  block(x, adder, training=False)
  assert not calls  # inference: tf.nn.gelu, which grappler fuses into the MatMul
  block(x, adder, training=True)  # Keras hands `training` down to the FFN's Dense
  assert calls == [tf.bfloat16, tf.bfloat16]  # one intermediate, run by 2 layers


def test_half_precision_training_softmax_computes_in_float32():
  rng = np.random.default_rng(5)
  logits = tf.constant(rng.normal(size=(2, 3, 4, 6)) * 8, tf.bfloat16)
  mask = np.ones((2, 6), np.int32)
  mask[1, 4:] = 0  # two padding keys in the second example
  adder = layers.attention_mask_adder(tf.constant(mask), tf.bfloat16)
  upstream = tf.constant(rng.normal(size=(2, 3, 4, 6)), tf.bfloat16)
  scale = 0.125
  with tf.GradientTape() as tape:
    tape.watch(logits)
    probs = layers.softmax.scaled_masked_softmax_in_float32(logits, adder, scale)
    loss = tf.reduce_sum(tf.cast(probs * upstream, tf.float32))
  d_logits = tape.gradient(loss, logits)
  assert probs.dtype == tf.bfloat16 and d_logits.dtype == tf.bfloat16
  # float64 from the same bfloat16 inputs: softmax(l * scale + adder) and its gradient.
  x = (tf.cast(logits, tf.float64).numpy() * scale
       + tf.cast(tf.cast(adder, tf.bfloat16), tf.float64).numpy())
  p = np.exp(x - x.max(-1, keepdims=True))
  p /= p.sum(-1, keepdims=True)
  w = tf.cast(upstream, tf.float64).numpy()
  expected = scale * p * (w - (w * p).sum(-1, keepdims=True))
  # One rounding to bfloat16 (8 bits) each: within half a bf16 ulp, plus float32's resolution.
  np.testing.assert_allclose(tf.cast(probs, tf.float64).numpy(), p, rtol=2 ** -8, atol=1e-6)
  np.testing.assert_allclose(tf.cast(d_logits, tf.float64).numpy(), expected, rtol=2 ** -8,
                             atol=1e-6)
  assert np.all(tf.cast(probs, tf.float32).numpy()[1, :, :, 4:] < 1e-30)  # the padding


def test_a_bf16_training_step_reaches_the_float32_softmax(monkeypatch):
  calls = []
  real = layers.softmax.scaled_masked_softmax_in_float32
  monkeypatch.setattr(layers.attention, "scaled_masked_softmax_in_float32",
                      lambda *args: calls.append(args[0].dtype) or real(*args))
  with policy_scope("mixed_bfloat16"):
    block = layers.SharedTransformer(2, 1, 1, 8, 2, 16)
  x = tf.constant(np.random.default_rng(3).normal(size=(2, 5, 8)), tf.float32)
  adder = layers.attention_mask_adder(tf.ones((2, 5), tf.int32), tf.bfloat16)
  block(x, adder, training=False)
  assert not calls  # inference: the graph ops every export runtime runs
  block(x, adder, training=True)
  assert calls == [tf.bfloat16, tf.bfloat16]  # 2 layers


def test_activation_names():
  assert layers.get_activation("linear") is None
  assert layers.get_activation("RELU") is tf.nn.relu
  with pytest.raises(ValueError, match="Unsupported activation"):
    layers.get_activation("swish")


@pytest.mark.parametrize("num_layers,num_groups,expected", [
    (12, 1, [0] * 12), (12, 12, list(range(12))), (3, 2, [0, 0, 1]), (6, 4, [0, 0, 1, 2, 2, 3]),
    (24, 5, [int(i / 24 * 5) for i in range(24)])])
def test_group_index(num_layers, num_groups, expected):
  assert [layers.group_index(i, num_layers, num_groups) for i in range(num_layers)] == expected


def _block_weights(block, rng, prefix="p"):
  w = {}
  pairs = {"query": block.attention.query, "key": block.attention.key,
           "value": block.attention.value, "output/dense": block.attention.output_dense}
  named = {f"{prefix}/attention_1/self/{k}": v for k, v in pairs.items() if k != "output/dense"}
  named[f"{prefix}/attention_1/output/dense"] = block.attention.output_dense
  named[f"{prefix}/ffn_1/intermediate/dense"] = block.intermediate
  named[f"{prefix}/ffn_1/intermediate/output/dense"] = block.ffn_output
  for name, layer in named.items():
    for part in ("kernel", "bias"):
      var = getattr(layer, part)
      value = rng.normal(0, 0.3, var.shape).astype(np.float32)
      var.assign(value)
      w[f"{name}/{part}"] = value
  for name, ln in ((f"{prefix}/LayerNorm", block.attention_layer_norm),
                   (f"{prefix}/LayerNorm_1", block.ffn_layer_norm)):
    for part in ("gamma", "beta"):
      value = (rng.normal(0, 0.3, ln.gamma.shape) + (part == "gamma")).astype(np.float32)
      getattr(ln, part).assign(value)
      w[f"{name}/{part}"] = value
  return w


@pytest.mark.parametrize("act", ["gelu", "relu", "tanh"])
def test_attention_ffn_block_matches_reference(act):
  rng = np.random.default_rng(0)
  block = layers.AttentionFFNBlock(hidden_size=12, num_attention_heads=3, intermediate_size=20,
                                   hidden_act=act)
  block.build()
  w = _block_weights(block, rng)
  x = rng.normal(size=(2, 5, 12)).astype(np.float32)
  mask = np.array([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]], np.int32)
  got = block(tf.constant(x), layers.attention_mask_adder(tf.constant(mask), tf.float32)).numpy()
  want = ref.block(w, "p", x.astype(np.float64), mask.astype(np.float64),
                   {"hidden_act": act, "num_attention_heads": 3})
  np.testing.assert_allclose(got, want, atol=2e-5)


def test_attention_ignores_masked_keys():
  rng = np.random.default_rng(1)
  att = layers.AlbertAttention(hidden_size=8, num_attention_heads=2)
  att.build()
  x = rng.normal(size=(1, 4, 8)).astype(np.float32)
  adder = layers.attention_mask_adder(tf.constant([[1, 1, 0, 0]]), tf.float32)
  y1 = att(tf.constant(x), adder).numpy()
  x2 = x.copy()
  x2[:, 2:] = rng.normal(size=(1, 2, 8))
  y2 = att(tf.constant(x2), adder).numpy()
  np.testing.assert_allclose(y1[:, :2], y2[:, :2], atol=1e-5)


def test_embeddings_reject_long_sequences():
  emb = layers.AlbertEmbeddings(vocab_size=10, embedding_size=4, type_vocab_size=2,
                                max_position_embeddings=6)
  emb.build()
  ids = tf.zeros([1, 7], tf.int32)
  with pytest.raises(ValueError, match="max_position_embeddings"):
    emb(ids, ids)
  assert emb(ids[:, :6], ids[:, :6]).shape == (1, 6, 4)


def test_pooled_logits_layout_and_config():
  head = layers.PooledLogits(num_classes=3, hidden_size=5)
  head.build()
  assert tuple(head.output_weights.shape) == (3, 5)
  x = np.arange(10, dtype=np.float32).reshape(2, 5)
  np.testing.assert_allclose(head(tf.constant(x)).numpy(),
                             x @ head.output_weights.numpy().T + head.output_bias.numpy(),
                             rtol=1e-5, atol=1e-6)
  clone = layers.PooledLogits.from_config(head.get_config())
  assert clone.num_classes == 3 and clone.hidden_size == 5


def test_layer_configs_round_trip():
  block = layers.AttentionFFNBlock(hidden_size=8, num_attention_heads=2, intermediate_size=16,
                                   hidden_act="relu", hidden_dropout_rate=0.1)
  clone = layers.AttentionFFNBlock.from_config(block.get_config())
  assert clone.get_config() == block.get_config()
  stack = layers.SharedTransformer(4, 2, 2, 8, 2, 16)
  clone = layers.SharedTransformer.from_config(stack.get_config())
  assert len(clone.groups) == 2 and len(clone.groups[0]) == 2


# -- Keras-native: registered, serialisable, output shapes known ---------------------------------
def _layer_cases():
  """(layer, call args, compute_output_shape kwargs) for every layer, unbuilt: the first call
  builds it as Keras does."""
  rng = np.random.default_rng(2)
  x = tf.constant(rng.normal(size=(2, 5, 8)), tf.float32)
  ids = tf.constant(rng.integers(0, 10, (2, 5)), tf.int32)
  adder = layers.attention_mask_adder(tf.constant([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]]), tf.float32)
  table = tf.constant(rng.normal(size=(10, 4)), tf.float32)
  positions = tf.constant([[0, 3, 4], [1, 2, 0]], tf.int32)
  p_mask = tf.constant([[1, 0, 0, 0, 1], [1, 0, 0, 1, 1]], tf.float32)
  return {
      "Dense": (layers.Dense(6, activation="gelu"), (x,), {"input_shape": (2, 5, 8)}),
      "LayerNorm": (layers.LayerNorm(epsilon=1e-12), (x,), {"input_shape": (2, 5, 8)}),
      "AlbertAttention": (layers.AlbertAttention(8, 2), (x, adder), {"input_shape": (2, 5, 8)}),
      "AlbertEmbeddings": (layers.AlbertEmbeddings(10, 4, 2, 6), (ids, ids * 0),
                           {"input_shape": (2, 5)}),
      "AttentionFFNBlock": (layers.AttentionFFNBlock(8, 2, 12), (x, adder),
                            {"input_shape": (2, 5, 8)}),
      "SharedTransformer": (layers.SharedTransformer(3, 2, 2, 8, 2, 12), (x, adder),
                            {"input_shape": (2, 5, 8)}),
      "Pooler": (layers.Pooler(8), (x,), {"input_shape": (2, 5, 8)}),
      "MaskedLMHead": (layers.MaskedLMHead(8, 4, 10), (x, positions, table),
                       {"sequence_output_shape": (2, 5, 8), "positions_shape": (2, 3)}),
      "PooledLogits": (layers.PooledLogits(3, 8), (x[:, 0],), {"input_shape": (2, 8)}),
      "SpanLogits": (squad_heads.SpanLogits(8), (x,), {"input_shape": (2, 5, 8)}),
      "SquadV2Head": (squad_heads.SquadV2Head(8, start_n_top=2, end_n_top=3), (x, p_mask),
                      {"sequence_output_shape": (2, 5, 8), "p_mask_shape": (2, 5)}),
  }


def _shapes(structure):
  return tf.nest.map_structure(lambda t: tuple(t.shape), structure)


@pytest.mark.parametrize("name", sorted(_layer_cases()))
def test_layer_is_registered_serialisable_and_knows_its_output_shape(name):
  layer, args, shape_kwargs = _layer_cases()[name]
  out = layer(*args)
  assert _shapes(out) == keras.tree.map_shape_structure(
      tuple, layer.compute_output_shape(**shape_kwargs))

  serialized = keras.saving.serialize_keras_object(layer)
  assert serialized["registered_name"] == f"albert_tf>{name}"
  clone = keras.saving.deserialize_keras_object(serialized)
  assert type(clone) is type(layer) and clone.get_config() == layer.get_config()
  clone = type(layer).from_config(layer.get_config())
  assert clone.get_config() == layer.get_config()
  # Same config, same variables: the clone computes the same outputs with the same weights.
  clone(*args)
  assert [v.shape for v in clone.weights] == [v.shape for v in layer.weights]
  for a, b in zip(clone.weights, layer.weights):
    a.assign(b)
  for a, b in zip(tf.nest.flatten(clone(*args)), tf.nest.flatten(out)):
    np.testing.assert_array_equal(a, b)


def test_squad_v2_head_symbolic_outputs_follow_training():
  head = squad_heads.SquadV2Head(8, start_n_top=2, end_n_top=3)
  seq, p_mask = keras.Input((5, 8)), keras.Input((5,))
  inference = head(seq, p_mask)
  assert {k: (tuple(v.shape), v.dtype) for k, v in inference.items()} == {
      "start_top_log_probs": ((None, 2), "float32"), "start_top_index": ((None, 2), "int32"),
      "end_top_log_probs": ((None, 6), "float32"), "end_top_index": ((None, 6), "int32"),
      "cls_logits": ((None,), "float32")}
  training = head(seq, p_mask, keras.Input((), dtype="int32"), training=True)
  assert {k: tuple(v.shape) for k, v in training.items()} == {
      "start_log_probs": (None, 5), "end_log_probs": (None, 5), "cls_logits": (None,)}


def test_original_variable_names_of_a_block():
  block = layers.AttentionFFNBlock(hidden_size=8, num_attention_heads=2, intermediate_size=16)
  block.build()
  names = block.original_variables("p")
  assert list(names) == [
      f"p/{n}" for n in (
          "attention_1/self/query/kernel", "attention_1/self/query/bias",
          "attention_1/self/key/kernel", "attention_1/self/key/bias",
          "attention_1/self/value/kernel", "attention_1/self/value/bias",
          "attention_1/output/dense/kernel", "attention_1/output/dense/bias",
          "LayerNorm/gamma", "LayerNorm/beta",
          "ffn_1/intermediate/dense/kernel", "ffn_1/intermediate/dense/bias",
          "ffn_1/intermediate/output/dense/kernel", "ffn_1/intermediate/output/dense/bias",
          "LayerNorm_1/gamma", "LayerNorm_1/beta")]
  assert {id(v) for v in names.values()} == {id(v) for v in block.weights}
