"""ALBERT for SQuAD: the v1 span labeler and the v2 model with its answerability head."""

import keras
import tensorflow as tf

from albert_tf.core.config import AlbertConfig
from albert_tf.tasks.squad.heads import SpanLogits, SquadV2Head
from albert_tf.models.base import sequence_input_shapes
from albert_tf.models.encoder import ENCODER_INPUTS, AlbertModel
from albert_tf.models.task import AlbertTask


@keras.saving.register_keras_serializable(package="albert_tf")
class AlbertSpanLabeler(AlbertTask):
  """SQuAD v1.1 as the original's create_v1_model: start and end logits over the sequence (the
  original's `cls/squad/output_weights` [2, H] and `output_bias` [2]). Registered with Keras as
  `albert_tf>AlbertSpanLabeler` (see `AlbertModel`).

  Args:
    config: an `AlbertConfig`, its dict, or None to take `encoder.config`.
    encoder: an `AlbertModel` whose variables to share, or None to make one from `config`.
    **kwargs: passed to `keras.Model` (name, default "albert_span_labeler").

  Call arguments:
    inputs: a dict of the `AlbertModel` inputs.
    training: bool. Applies dropout when True.

  Returns:
    The encoder's dict (see `AlbertModel`) plus `start_logits` and `end_logits` float [B, T]
    (the original's predictions call them start_log_prob / end_log_prob).

  Raises:
    ValueError: as `AlbertTask` for `config` and `encoder`.
  """

  def __init__(self, config: AlbertConfig | dict | None = None,
               encoder: AlbertModel | None = None, **kwargs):
    kwargs.setdefault("name", "albert_span_labeler")
    super().__init__(config, encoder, **kwargs)
    self.span_logits = SpanLogits(self.config.hidden_size, self.config.initializer_range,
                                  name="span_logits")
    self.span_logits.build((None, None, self.config.hidden_size))
    self.build(sequence_input_shapes(ENCODER_INPUTS))

  def call(self, inputs, training=False):
    outputs = dict(self.encoder(inputs, training=training))
    outputs["start_logits"], outputs["end_logits"] = self.span_logits(outputs["sequence_output"])
    return outputs

  def compute_output_shape(self, input_shape: dict) -> dict:
    shapes = dict(self.encoder.compute_output_shape(input_shape))
    shapes["start_logits"], shapes["end_logits"] = self.span_logits.compute_output_shape(
        shapes["sequence_output"])
    return shapes

  def original_variables(self) -> dict[str, tf.Variable]:
    """{original name: variable}: `bert/...` plus `cls/squad/output_weights`, `output_bias`."""
    names = self.encoder.original_variables()
    names.update(self.span_logits.original_variables("cls/squad"))
    return names

  def checkpoint_parts(self) -> dict:
    """`encoder` and `span_logits`, as our checkpoints hold them."""
    return {"encoder": self.encoder, "span_logits": self.span_logits}


@keras.saving.register_keras_serializable(package="albert_tf")
class AlbertSquadV2(AlbertTask):
  """SQuAD 2.0 as the original's create_v2_model (see `layers.span_heads.SquadV2Head`).
  Registered with Keras as `albert_tf>AlbertSquadV2` (see `AlbertModel`).

  Args:
    config: an `AlbertConfig`, its dict, or None to take `encoder.config`.
    start_n_top: int. K, the number of start positions kept at inference.
    end_n_top: int. The number of end positions kept for each start at inference.
    dropout_rate: float. Dropout before the answerability logit (training only).
    encoder: an `AlbertModel` whose variables to share, or None to make one from `config`.
    **kwargs: passed to `keras.Model` (name, default "albert_squad_v2").

  Call arguments:
    inputs: a dict: the `AlbertModel` inputs plus `p_mask` int [B, T] (1 where a position cannot
      be part of an answer), and `start_positions` int [B] when training.
    training: bool. Conditions the end on the true start, and applies dropout, when True.

  Returns:
    The encoder's dict (see `AlbertModel`) plus the head's outputs. Training: start_log_probs,
    end_log_probs float [B, T]. Inference: start_top_log_probs float and start_top_index int32
    [B, K], end_top_log_probs float and end_top_index int32 [B, K * end_n_top]. Both: cls_logits
    float [B].

  Raises:
    ValueError: as `AlbertTask` for `config` and `encoder`.
  """

  def __init__(self, config: AlbertConfig | dict | None = None, start_n_top: int = 5,
               end_n_top: int = 5, dropout_rate: float = 0.1,
               encoder: AlbertModel | None = None, **kwargs):
    kwargs.setdefault("name", "albert_squad_v2")
    super().__init__(config, encoder, **kwargs)
    self.start_n_top = start_n_top
    self.end_n_top = end_n_top
    self.dropout_rate = dropout_rate
    self.head = SquadV2Head(self.config.hidden_size, start_n_top, end_n_top, dropout_rate,
                            self.config.initializer_range, name="squad_v2_head")
    self.head.build((None, None, self.config.hidden_size), (None, None))
    self.build(sequence_input_shapes(ENCODER_INPUTS + ("p_mask",)))

  def call(self, inputs, training=False):
    outputs = dict(self.encoder(inputs, training=training))
    outputs.update(self.head(outputs["sequence_output"], inputs["p_mask"],
                             inputs.get("start_positions"), training=training))
    return outputs

  def compute_output_shape(self, input_shape: dict) -> dict:
    """The inference outputs' shapes (what `summary()` shows); see `compute_output_spec`."""
    shapes = dict(self.encoder.compute_output_shape(input_shape))
    shapes.update(self.head.compute_output_shape(shapes["sequence_output"]))
    return shapes

  def compute_output_spec(self, inputs, training=False):
    # The head's outputs differ with `training`, which compute_output_shape does not receive.
    shapes = self.encoder.compute_output_shape({k: v.shape for k, v in inputs.items()})
    specs = keras.tree.map_shape_structure(
        lambda shape: keras.KerasTensor(shape, dtype=self.compute_dtype), shapes)
    sequence_output = specs["sequence_output"]
    specs.update(self.head.compute_output_spec(sequence_output, inputs["p_mask"],
                                               inputs.get("start_positions"), training=training))
    return specs

  def original_variables(self) -> dict[str, tf.Variable]:
    """{original name: variable}: `bert/...` plus the original's top-level `start_logits/...`,
    `end_logits/...` and `answer_class/...`."""
    names = self.encoder.original_variables()
    names.update(self.head.original_variables())
    return names

  def checkpoint_parts(self) -> dict:
    """`encoder` and `squad_v2_head`, as our checkpoints hold them."""
    return {"encoder": self.encoder, "squad_v2_head": self.head}

  def get_config(self) -> dict:
    return dict(super().get_config(), start_n_top=self.start_n_top, end_n_top=self.end_n_top,
                dropout_rate=self.dropout_rate)
