"""What every ALBERT keras.Model here shares: built from an AlbertConfig, weights made eagerly,
serialised as that config, and its variables named in the original layout."""

import keras
import tensorflow as tf

from albert_tf.core.config import AlbertConfig


class ConfiguredModel(keras.Model):
  """A keras.Model made from an AlbertConfig (or its dict), serialised as that config.

  Subclasses create and build their layers in `__init__`, so that checkpoints load before any
  call, then call `self.build(input_shapes)`: that records the input shapes, from which
  `summary()` and `compute_output_shape` show every layer's output shape.

  Args:
    config: an `AlbertConfig`, or its dict (as `AlbertConfig.to_dict()` writes it).
    **kwargs: passed to `keras.Model` (name, ...).
  """

  def __init__(self, config: AlbertConfig | dict, **kwargs):
    super().__init__(**kwargs)
    self.config = AlbertConfig.from_dict(config) if isinstance(config, dict) else config

  def build(self, input_shape=None):
    # The weights already exist (made in __init__); Keras's wrapper of build records the shapes.
    self.built = True

  @property
  def _default_save_signature(self):
    # tf.saved_model.save traces this function for every Keras model it meets. Keras derives it
    # from the shapes build() records, with float32 inputs, which cannot run a model of int token
    # ids; our SavedModels define their own signatures (albert_tf.export), so there is none.
    return None

  def original_variables(self) -> dict[str, tf.Variable]:
    """{original (released TF1) name: variable} of every weight of the model.

    `albert_tf.load_original_checkpoint` and `save_original_checkpoint` read and write these
    names.
    """
    raise NotImplementedError(
        f"{type(self).__name__} must define original_variables() to be saved or loaded in the "
        "original layout")

  def checkpoint_parts(self) -> dict:
    """{name: layer} under which our own (object-based, tf.train.Checkpoint) checkpoints hold the
    model's weights: `encoder` for the encoder, one name per head."""
    raise NotImplementedError(
        f"{type(self).__name__} must define checkpoint_parts() to be saved or loaded in our "
        "checkpoints")

  def get_config(self) -> dict:
    return {"config": self.config.to_dict(), "name": self.name}

  @classmethod
  def from_config(cls, config: dict):
    return cls(**config)


def sequence_input_shapes(names, shape=(None, None)) -> dict:
  """{name: shape} of a model's int inputs, for `build` (any batch and length by default)."""
  return {name: shape for name in names}
