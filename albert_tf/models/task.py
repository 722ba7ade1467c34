"""AlbertTask: what every task model (pretrainer, classifier, span labelers, multiple choice)
shares: an AlbertModel encoder, made from the config or given, heads on its outputs, and the
Hugging Face seam (what transformers calls the model, what its export writes)."""

import dataclasses
from typing import Optional

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

  The Hugging Face seam, also declared by each task class (read by albert_tf.checkpoints.hf and
  albert_tf.export.hf, which hold no list of models):
    HF_ARCHITECTURE: the transformers class whose checkpoint has the same weights, or None.
    HF_POOLER: whether that class has the pooler (transformers' QA and token classifiers don't).
    HF_ALIASES: other transformers classes whose checkpoints load into this model.
    HF_HEAD: export_checkpoints' --head name of this head (None: not exportable by name).
    HF_PROBLEM_TYPE: with HF_HEAD shared by classes of the same weights, the config.json
      problem_type that picks this one (None: the default of that head).
    HEAD_SCOPES: the first parts of the head weights' names in the released layout, ours and
      Hugging Face's (how a checkpoint's head is recognised).
    hf_config_fields(): the config.json fields of the head (labels, problem_type).
    for_export(config, checkpoint, num_labels): the model to load `checkpoint` into for export.

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
  HF_ARCHITECTURE: Optional[str] = None
  HF_POOLER = True
  HF_ALIASES: tuple = ()
  HF_HEAD: Optional[str] = None
  HF_PROBLEM_TYPE: Optional[str] = None
  HEAD_SCOPES: tuple = ()

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

  def hf_config_fields(self) -> dict:
    """config.json fields of the head, over the encoder's (None: drop the field): id2label and
    label2id of `label_names` when the model has them (transformers' pipelines report labels by
    these names)."""
    names = getattr(self, "label_names", None)
    if not names:
      return {}
    return {"id2label": {str(i): name for i, name in enumerate(names)},
            "label2id": {name: i for i, name in enumerate(names)}}

  @classmethod
  def for_export(cls, config, checkpoint, num_labels):
    """The model of this class to load `checkpoint` into for an export (num_labels: of its
    output_weights, or 1)."""
    del checkpoint, num_labels
    return cls(config)
