"""Answer-span heads of the original's SQuAD models (squad_utils.create_v1_model /
create_v2_model)."""

import keras
import tensorflow as tf

from albert_tf.layers.common import Dense, join_name, layer_norm, layer_norm_variables
from albert_tf.layers.heads import PooledLogits

# Added to the logits of positions that cannot start or end an answer (p_mask 1), as the original.
P_MASK_ADDER = -1e30


@keras.saving.register_keras_serializable(package="albert_tf")
class SpanLogits(keras.layers.Layer):
  """SQuAD v1: start and end logits from each position's vector, the original's
  `cls/squad/output_weights` [2, H] and `output_bias` [2] (a `PooledLogits` of 2 classes).

  Args:
    hidden_size: int. H.
    initializer_range: float. Standard deviation of output_weights' truncated-normal initializer.
    **kwargs: passed to `keras.layers.Layer`.

  Call arguments:
    sequence_output: float tensor [B, T, H].

  Returns:
    A tuple (start_logits, end_logits), each float [B, T].
  """

  def __init__(self, hidden_size: int, initializer_range: float = 0.02, **kwargs):
    super().__init__(**kwargs)
    self.hidden_size = hidden_size
    self.initializer_range = initializer_range
    self.logits = PooledLogits(2, hidden_size, initializer_range, name="logits")

  def build(self, input_shape=None):
    self.logits.build()
    self.built = True

  def call(self, sequence_output):
    shape = tf.shape(sequence_output)
    flat = tf.reshape(sequence_output, [-1, self.hidden_size])
    logits = tf.reshape(self.logits(flat), [shape[0], shape[1], 2])
    return logits[:, :, 0], logits[:, :, 1]

  def compute_output_shape(self, input_shape):
    batch_and_length = tuple(input_shape)[:2]
    return batch_and_length, batch_and_length

  def original_variables(self, prefix: str) -> dict:
    """{original name: variable} under `prefix` (the original's `cls/squad`)."""
    return self.logits.original_variables(prefix)

  def get_config(self):
    return dict(super().get_config(), hidden_size=self.hidden_size,
                initializer_range=self.initializer_range)


def _masked_log_softmax(logits, p_mask):
  masked = logits * (1.0 - p_mask) + P_MASK_ADDER * p_mask
  return masked, tf.nn.log_softmax(masked, axis=-1)


@keras.saving.register_keras_serializable(package="albert_tf")
class SquadV2Head(keras.layers.Layer):
  """SQuAD 2.0: start log-probs; end log-probs conditioned on the start (the true start in
  training, a beam of start_n_top starts x end_n_top ends at inference); an answerability logit
  from the start-probability-weighted state and the [CLS] state.

  Variables as the original's scopes: start_logits/dense, end_logits/dense_0, end_logits/LayerNorm,
  end_logits/dense_1, answer_class/dense_0, answer_class/dense_1 (no bias).

  Args:
    hidden_size: int. H.
    start_n_top: int. K, the number of start positions kept at inference.
    end_n_top: int. The number of end positions kept for each start at inference.
    dropout_rate: float. Dropout before the answerability logit (training only).
    initializer_range: float. Standard deviation of the kernels' truncated-normal initializer.
    **kwargs: passed to `keras.layers.Layer`.

  Call arguments:
    sequence_output: float tensor [B, T, H].
    p_mask: int or float tensor [B, T]: 1 where a position cannot be part of an answer.
    start_positions: int tensor [B], the true starts; required when training.
    training: bool. Conditions the end on the true start, and applies dropout, when True.

  Returns:
    A dict. Training: start_log_probs, end_log_probs float [B, T]. Inference:
    start_top_log_probs float and start_top_index int32 [B, K], end_top_log_probs float and
    end_top_index int32 [B, K * end_n_top]. Both: cls_logits float [B].
  """

  def __init__(self, hidden_size: int, start_n_top: int = 5, end_n_top: int = 5,
               dropout_rate: float = 0.1, initializer_range: float = 0.02, **kwargs):
    super().__init__(**kwargs)
    self.hidden_size = hidden_size
    self.start_n_top = start_n_top
    self.end_n_top = end_n_top
    self.dropout_rate = dropout_rate
    self.initializer_range = initializer_range
    dense = lambda units, name, **kw: Dense(units, initializer_range=initializer_range,
                                            name=name, **kw)
    self.start_dense = dense(1, "start_dense")
    self.end_dense_0 = dense(hidden_size, "end_dense_0", activation="tanh")
    self.end_layer_norm = layer_norm("end_layer_norm")
    self.end_dense_1 = dense(1, "end_dense_1")
    self.answer_dense_0 = dense(hidden_size, "answer_dense_0", activation="tanh")
    self.answer_dropout = keras.layers.Dropout(dropout_rate)
    self.answer_dense_1 = dense(1, "answer_dense_1", use_bias=False)

  def build(self, sequence_output_shape=None, p_mask_shape=None, start_positions_shape=None):
    h = self.hidden_size
    self.start_dense.build((None, h))
    self.end_dense_0.build((None, 2 * h))
    self.end_layer_norm.build((None, h))
    self.end_dense_1.build((None, h))
    self.answer_dense_0.build((None, 2 * h))
    self.answer_dense_1.build((None, h))
    self.built = True

  def _end_log_probs(self, sequence_output, start_states, p_mask):
    """sequence_output [B, T, H], start_states [B, K, H] -> end log-probs [B, K, T]."""
    seq_len = tf.shape(sequence_output)[1]
    k = tf.shape(start_states)[1]
    tokens = tf.tile(sequence_output[:, tf.newaxis], [1, k, 1, 1])          # [B, K, T, H]
    starts = tf.tile(start_states[:, :, tf.newaxis], [1, 1, seq_len, 1])    # [B, K, T, H]
    x = self.end_layer_norm(self.end_dense_0(tf.concat([tokens, starts], axis=-1)))
    logits = tf.squeeze(self.end_dense_1(x), -1)                             # [B, K, T]
    return _masked_log_softmax(logits, p_mask[:, tf.newaxis])[1]

  def call(self, sequence_output, p_mask, start_positions=None, training=False):
    p_mask = tf.cast(p_mask, sequence_output.dtype)
    start_logits = tf.squeeze(self.start_dense(sequence_output), -1)        # [B, T]
    start_masked, start_log_probs = _masked_log_softmax(start_logits, p_mask)
    out = {}
    if training:
      start_states = tf.gather(sequence_output, tf.reshape(start_positions, [-1, 1]),
                               batch_dims=1)                                # [B, 1, H]
      out["start_log_probs"] = start_log_probs
      out["end_log_probs"] = self._end_log_probs(sequence_output, start_states, p_mask)[:, 0]
    else:
      top_log_probs, top_index = tf.math.top_k(start_log_probs, k=self.start_n_top)
      start_states = tf.gather(sequence_output, top_index, batch_dims=1)   # [B, K, H]
      end_log_probs = self._end_log_probs(sequence_output, start_states, p_mask)
      end_top_log_probs, end_top_index = tf.math.top_k(end_log_probs, k=self.end_n_top)
      batch = tf.shape(sequence_output)[0]
      out.update(start_top_log_probs=top_log_probs, start_top_index=top_index,
                 end_top_log_probs=tf.reshape(end_top_log_probs, [batch, -1]),
                 end_top_index=tf.reshape(end_top_index, [batch, -1]))
    start_p = tf.nn.softmax(start_masked, axis=-1)
    start_feature = tf.einsum("bth,bt->bh", sequence_output, start_p)
    answer = self.answer_dense_0(tf.concat([start_feature, sequence_output[:, 0]], axis=-1))
    answer = self.answer_dropout(answer, training=training)
    out["cls_logits"] = tf.squeeze(self.answer_dense_1(answer), -1)
    return out

  def _output_shapes(self, sequence_output_shape, training):
    batch, length = tuple(sequence_output_shape)[:2]
    if training:
      shapes = {"start_log_probs": (batch, length), "end_log_probs": (batch, length)}
    else:
      k, beam = self.start_n_top, self.start_n_top * self.end_n_top
      shapes = {"start_top_log_probs": (batch, k), "start_top_index": (batch, k),
                "end_top_log_probs": (batch, beam), "end_top_index": (batch, beam)}
    shapes["cls_logits"] = (batch,)
    return shapes

  def compute_output_shape(self, sequence_output_shape, p_mask_shape=None,
                           start_positions_shape=None):
    """The inference outputs' shapes (what `summary()` shows); see `compute_output_spec`."""
    return self._output_shapes(sequence_output_shape, training=False)

  def compute_output_spec(self, sequence_output, p_mask, start_positions=None, training=False):
    # The outputs differ with `training`, which compute_output_shape does not receive.
    shapes = self._output_shapes(sequence_output.shape, training)
    return {key: keras.KerasTensor(shape, dtype="int32" if key.endswith("_index")
                                   else self.compute_dtype)
            for key, shape in shapes.items()}

  def original_variables(self, prefix: str = "") -> dict:
    """{original name: variable}: `start_logits/...`, `end_logits/...`, `answer_class/...`
    (top-level in the original's checkpoints, so `prefix` is empty there)."""
    scope = lambda name: join_name(prefix, name)
    names = self.start_dense.original_variables(scope("start_logits/dense"))
    names.update(self.end_dense_0.original_variables(scope("end_logits/dense_0")))
    names.update(layer_norm_variables(scope("end_logits/LayerNorm"), self.end_layer_norm))
    names.update(self.end_dense_1.original_variables(scope("end_logits/dense_1")))
    names.update(self.answer_dense_0.original_variables(scope("answer_class/dense_0")))
    names.update(self.answer_dense_1.original_variables(scope("answer_class/dense_1")))
    return names

  def get_config(self):
    return dict(super().get_config(), hidden_size=self.hidden_size,
                start_n_top=self.start_n_top, end_n_top=self.end_n_top,
                dropout_rate=self.dropout_rate, initializer_range=self.initializer_range)
