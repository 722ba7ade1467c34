"""Does a tokenizer's vocabulary fit the model's embedding table?

An id at or above the config's vocab_size has no embedding row: tf.gather fails on it at serve or
train time (`indices[...] = 1200 is not in [0, 1000)`), on a GPU it silently reads zeros. A
tokenizer with fewer pieces than vocab_size is fine: released models pad their tables.
"""

from albert_tf.core import errors
from albert_tf.core import io


def spm_vocab_size(spm_model_file):
  """The number of pieces of a SentencePiece model."""
  from albert_tf.tokenization.full import (
      load_sentencepiece)
  return load_sentencepiece(spm_model_file).GetPieceSize()


def wordpiece_vocab_size(vocab_file):
  """The number of ids of a WordPiece vocab file: its line count (an id is a line number)."""
  with io.open_binary(vocab_file) as f:
    data = f.read()
  # As iterating the file in binary mode counts: lines end at b"\n", a last one may lack it.
  return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)


def check_vocab_fits(tokenizer_vocab_size, config_vocab_size, tokenizer_file, config_file=None):
  """Raises ValueError when the tokenizer can produce ids the model has no embedding for."""
  if tokenizer_vocab_size <= config_vocab_size:
    return
  config = f"the config {config_file}" if config_file else "the model's config"
  raise errors.ConfigError(
      f"tokenizer {tokenizer_file} has {tokenizer_vocab_size} pieces but {config} has "
      f"vocab_size {config_vocab_size}: ids {config_vocab_size} to {tokenizer_vocab_size - 1} "
      f"have no embedding and would fail at serve time. Use the SentencePiece model (or vocab "
      f"file) the model was trained with, or the albert_config.json that matches this tokenizer.")
