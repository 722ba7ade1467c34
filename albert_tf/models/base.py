"""What every ALBERT keras.Model here shares: built from an AlbertConfig, weights made eagerly."""

import keras

from albert_tf.config import AlbertConfig


class ConfiguredModel(keras.Model):
  """A keras.Model made from an AlbertConfig (or its dict), serialised as that config.

  Subclasses create and build their layers in __init__, so that checkpoints load before any call.
  """

  def __init__(self, config, **kwargs):
    super().__init__(**kwargs)
    self.config = AlbertConfig.from_dict(config) if isinstance(config, dict) else config

  def build(self, input_shape=None):
    self.built = True

  def get_config(self):
    return {"config": self.config.to_dict(), "name": self.name}

  @classmethod
  def from_config(cls, config):
    return cls(**config)
