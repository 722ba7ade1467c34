"""AlbertTask: what every task model (pretrainer, classifier, span labelers, multiple choice)
shares: an AlbertModel encoder, made from the config or given, and heads on its outputs."""

from albert_tf.config import AlbertConfig
from albert_tf.models.base import ConfiguredModel
from albert_tf.models.encoder import AlbertModel


class AlbertTask(ConfiguredModel):
  """An AlbertModel (`self.encoder`) with task heads, as Model Garden's and keras-hub's tasks.

  Give `config` for a new encoder, or `encoder` to build the task on an existing AlbertModel:
  the task then holds that very encoder, so the two share their variables (fine-tune a
  pretrainer's encoder, or put several heads on one encoder). With both, they must agree.

  Subclasses add their heads, then define `original_variables` (the encoder's `bert/...` names
  plus the heads') and `checkpoint_parts` (`encoder` plus one part per head).

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
