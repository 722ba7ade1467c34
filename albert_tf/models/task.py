"""AlbertTask: what every task model (pretrainer, classifier, span labelers, multiple choice)
shares: an AlbertModel encoder, made from the config or given, and heads on its outputs. What
transformers calls each model is not here: albert_tf.checkpoints.hf_heads holds it."""

import dataclasses

from albert_tf.core.config import AlbertConfig
from albert_tf.models.base import ConfiguredModel
from albert_tf.models.encoder import AlbertModel


@dataclasses.dataclass(frozen=True)
class TaskHead:
  """A head a task declares (AlbertTask.HEADS), for the generic original_variables,
  checkpoint_parts and compute_output_shape.

  Args:
    attribute: the model attribute holding the head layer (also its checkpoint part's name).
    reads: the encoder output it takes ("pooled_output" [B, H], "sequence_output" [B, T, H]).
    writes: the model output it gives ("logits").
    scope: the prefix of its original variable names ("" for top-level names such as
      `output_weights`).
  """
  attribute: str
  reads: str
  writes: str
  scope: str = ""


class AlbertTask(ConfiguredModel):
  """An AlbertModel (`self.encoder`) with task heads, as Model Garden's and keras-hub's tasks.

  Give `config` for a new encoder, or `encoder` to build the task on an existing AlbertModel:
  the task then holds that very encoder, so the two share their variables (fine-tune a
  pretrainer's encoder, or put several heads on one encoder). With both, they must agree.

  Subclasses add their heads and declare them in `HEADS` (a tuple of `TaskHead`): then
  `original_variables` (the encoder's `bert/...` names plus each head's, under its scope),
  `checkpoint_parts` (`encoder` plus one part per head) and `compute_output_shape` (the encoder's
  outputs plus each head's) come from that declaration; a model whose heads take more than one
  encoder output defines the three itself.

  Each task class may also define `for_export(config, checkpoint, num_labels)`: the model to
  load `checkpoint` into for an export (with the label names saved beside it, say). Its Hugging
  Face head (transformers class, pooler, problem_type) is declared by its task package
  (HF_HEADS: see albert_tf.checkpoints.hf_heads), not here.

  Serialisation (`get_config`, `model.save`) keeps the encoder's config, not the encoder object:
  `from_config` and `keras.models.load_model` make a new encoder (the saved weights then fill it).

  Args:
    config: an `AlbertConfig`, its dict, or None to take `encoder.config`.
    encoder: an `AlbertModel` to share, or None to make one (named "encoder") from `config`.
    **kwargs: passed to `keras.Model` (name, ...).

  Raises:
    ValueError: when neither is given, or `config` differs from `encoder.config`.
    TypeError: when `encoder` is not an AlbertModel.
  """

  def __init__(self, config: AlbertConfig | dict | None = None,
               encoder: AlbertModel | None = None, **kwargs):
    name = type(self).__name__
    if encoder is not None and not isinstance(encoder, AlbertModel):
      raise TypeError(f"{name}: `encoder` must be an albert_tf.AlbertModel, got "
                      f"{type(encoder).__name__}")
    if isinstance(config, dict):
      config = AlbertConfig.from_dict(config)
    if encoder is None and config is None:
      raise ValueError(f"{name}: give `config` (an AlbertConfig) or `encoder` (an AlbertModel)")
    if encoder is not None and config is not None and config != encoder.config:
      raise ValueError(f"{name}: `config` differs from `encoder.config`; pass only `encoder` "
                       "(its config is used) or a matching config")
    super().__init__(encoder.config if encoder is not None else config, **kwargs)
    # The first layer of every task, so its variables come first, as they always have.
    self.encoder = encoder if encoder is not None else AlbertModel(self.config, name="encoder")

  HEADS: tuple = ()

  def original_variables(self) -> dict:
    """{original name: variable}: the encoder's `bert/...` plus each declared head's."""
    names = self.encoder.original_variables()
    for head in self.HEADS:
      names.update(getattr(self, head.attribute).original_variables(head.scope))
    return names

  def checkpoint_parts(self) -> dict:
    """`encoder` plus each declared head under its attribute name, as our checkpoints hold them."""
    parts = {"encoder": self.encoder}
    parts.update({head.attribute: getattr(self, head.attribute) for head in self.HEADS})
    return parts

  def compute_output_shape(self, input_shape: dict) -> dict:
    """The encoder's output shapes plus each declared head's (from the output it reads)."""
    shapes = dict(self.encoder.compute_output_shape(input_shape))
    for head in self.HEADS:
      shapes[head.writes] = getattr(self, head.attribute).compute_output_shape(shapes[head.reads])
    return shapes

  @classmethod
  def checked_num_labels(cls, num_labels, label_names, note: str = "") -> int:
    """The number of labels of a labelled head: `num_labels`, else the number of `label_names`.

    Args:
      num_labels: int >= 1, or None to count label_names.
      label_names: one name per label, or None.
      note: said after "an int >= 1" when num_labels is wrong (" (1 for regression)").

    Raises:
      ValueError: num_labels missing or < 1, or label_names of another length (naming the
        class).
    """
    if num_labels is None and label_names is not None:
      num_labels = len(label_names)
    if num_labels is None or num_labels < 1:
      raise ValueError(f"{cls.__name__}: num_labels must be an int >= 1{note}, got "
                       f"{num_labels!r}")
    if label_names is not None and len(label_names) != num_labels:
      raise ValueError(f"{cls.__name__}: {len(label_names)} label_names for "
                       f"num_labels={num_labels}; give one name per label")
    return num_labels

  @classmethod
  def for_export(cls, config, checkpoint, num_labels):
    """The model of this class to load `checkpoint` into for an export (num_labels: of its
    output_weights, or 1)."""
    del checkpoint, num_labels
    return cls(config)
