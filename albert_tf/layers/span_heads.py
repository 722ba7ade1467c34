"""Answer-span heads of the original's SQuAD models (squad_utils.create_v1_model /
create_v2_model)."""

import keras
import tensorflow as tf

from albert_tf.layers.common import Dense, layer_norm
from albert_tf.layers.heads import PooledLogits

# Added to the logits of positions that cannot start or end an answer (p_mask 1), as the original.
P_MASK_ADDER = -1e30


class SpanLogits(keras.layers.Layer):
  """v1: start and end logits from each position's vector (cls/squad/output_weights [2, H],
  output_bias [2]). sequence_output [B, T, H] -> (start_logits, end_logits) [B, T]."""

  def __init__(self, hidden_size, initializer_range=0.02, **kwargs):
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

  def get_config(self):
    return dict(super().get_config(), hidden_size=self.hidden_size,
                initializer_range=self.initializer_range)


def _masked_log_softmax(logits, p_mask):
  masked = logits * (1.0 - p_mask) + P_MASK_ADDER * p_mask
  return masked, tf.nn.log_softmax(masked, axis=-1)


class SquadV2Head(keras.layers.Layer):
  """v2: start log-probs; end log-probs conditioned on the start (the true start in training, a
  beam of start_n_top starts x end_n_top ends at inference); an answerability logit from the
  start-probability-weighted state and the [CLS] state.

  Variables as the original's scopes: start_logits/dense, end_logits/dense_0, end_logits/LayerNorm,
  end_logits/dense_1, answer_class/dense_0, answer_class/dense_1 (no bias).

  Call with sequence_output [B, T, H], p_mask [B, T] (1: not an answer position) and, when
  training, start_positions [B]. Returns a dict: training: start_log_probs, end_log_probs [B, T];
  inference: start_top_log_probs, start_top_index [B, start_n_top], end_top_log_probs,
  end_top_index [B, start_n_top * end_n_top]; both: cls_logits [B].
  """

  def __init__(self, hidden_size, start_n_top=5, end_n_top=5, dropout_rate=0.1,
               initializer_range=0.02, **kwargs):
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

  def build(self, input_shape=None):
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

  def get_config(self):
    return dict(super().get_config(), hidden_size=self.hidden_size,
                start_n_top=self.start_n_top, end_n_top=self.end_n_top,
                dropout_rate=self.dropout_rate, initializer_range=self.initializer_range)
