"""Shared weights under a mixed policy: a forward pass casts each once
(layers.common.weights_cast_once), inference and training alike; the outputs, and in training the
gradients, are those of a cast at every read, to the bit."""

import collections
import contextlib

import numpy as np
import tensorflow as tf

import albert_tf
from albert_tf.layers import transformer
from albert_tf.training.precision import policy_scope

LAYERS = 3
CONFIG = albert_tf.AlbertConfig(vocab_size=50, embedding_size=8, hidden_size=16,
                                num_hidden_layers=LAYERS, num_attention_heads=2,
                                intermediate_size=24, hidden_dropout_prob=0.0,
                                attention_probs_dropout_prob=0.0)
IDS = np.array([[2, 11, 17, 3], [2, 29, 3, 0]], np.int32)


def _weight_casts(model, training):
  """{shape: number of Cast ops reading a float32 variable of that shape} in the traced call."""
  inputs = {"input_ids": tf.constant(IDS), "input_mask": tf.constant((IDS > 0).astype(np.int32))}
  graph = tf.function(lambda b: model(b, training=training)).get_concrete_function(inputs).graph
  casts = collections.Counter()
  for op in graph.get_operations():
    if op.type == "Cast" and op.inputs[0].op.type == "ReadVariableOp":
      casts[tuple(op.inputs[0].shape)] += 1
  return casts


def _cast_at_every_read(monkeypatch):
  """The transformer without weights_cast_once's scope: each read of a weight casts it again."""
  monkeypatch.setattr(transformer, "weights_cast_once",
                      lambda training=False: contextlib.nullcontext())


def test_a_forward_pass_casts_each_shared_weight_once(monkeypatch):
  with policy_scope("mixed_bfloat16"):
    model = albert_tf.AlbertModel(CONFIG)
  # The FFN's [H, I] kernel is the shared block's alone: 1 cast, where a cast per read is one
  # per layer.
  assert _weight_casts(model, training=False)[(16, 24)] == 1
  assert _weight_casts(model, training=True)[(16, 24)] == 1
  _cast_at_every_read(monkeypatch)
  assert _weight_casts(model, training=True)[(16, 24)] == LAYERS


def _gradients(model):
  inputs = {"input_ids": IDS, "input_mask": (IDS > 0).astype(np.int32)}
  with tf.GradientTape() as tape:
    outputs = model(inputs, training=True)
    loss = tf.reduce_sum(tf.cast(outputs["sequence_output"], tf.float32) ** 2)
  # tf.convert_to_tensor: the embeddings' gradients are IndexedSlices. None: the pooler's (the
  # loss reads the sequence output only).
  return [None if g is None else tf.convert_to_tensor(g).numpy()
          for g in tape.gradient(loss, model.trainable_variables)]


def test_training_with_one_cast_gives_the_gradients_of_a_cast_per_read(monkeypatch):
  """Each read's gradient is cast to float32 and the reads' gradients summed in float32 either
  way (layers.common._shared_cast): the same bits, eager, the same kernels."""
  with policy_scope("mixed_bfloat16"):
    model = albert_tf.AlbertModel(CONFIG)
  once = _gradients(model)
  _cast_at_every_read(monkeypatch)
  every_read = _gradients(model)
  assert len(once) == len(every_read) == len(model.trainable_variables)
  assert sum(a is not None for a in once) >= 14  # embeddings, projection, the shared block
  for variable, a, b in zip(model.trainable_variables, once, every_read):
    if a is None or b is None:
      assert a is None and b is None and "pooler" in variable.path, variable.path
      continue
    assert a.dtype == np.float32, variable.path
    np.testing.assert_array_equal(a, b, err_msg=variable.path)


def test_casting_once_gives_the_same_outputs(monkeypatch):
  with policy_scope("mixed_bfloat16"):
    model = albert_tf.AlbertModel(CONFIG)
  inputs = {"input_ids": IDS, "input_mask": (IDS > 0).astype(np.int32)}
  once = [model(inputs, training=t)["sequence_output"].numpy() for t in (False, True)]
  _cast_at_every_read(monkeypatch)
  every_read = [model(inputs, training=t)["sequence_output"].numpy() for t in (False, True)]
  # Each mode against itself: a training pass computes its attention softmax and its GELU in
  # float32 (layers.softmax, layers.activations), an inference pass in the policy's bfloat16, so
  # the two modes round differently. Eager, within one mode the same bfloat16 values go into the
  # same kernels, and the results agree to the bit.
  for training, a, b in zip((False, True), once, every_read):
    np.testing.assert_array_equal(a, b, err_msg=f"training={training}")
