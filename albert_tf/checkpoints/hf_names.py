"""Hugging Face transformers' ALBERT weight names: each original (TF1) variable name's key in
transformers' checkpoints, and whether its value is transposed (torch's Linear keeps [out, in]).

HF's ALBERT layout is a renaming of the original one. The MLM decoder is tied to the word
embeddings, so HF writes neither `predictions.decoder.weight` nor `predictions.decoder.bias` (the
latter is `predictions.bias`). No TensorFlow here.
"""

import re

from albert_tf.core import errors

# The encoder's keys are under it in every model but transformers' AlbertModel.
PREFIX = "albert."
PROJECTION = "encoder.embedding_hidden_mapping_in"
# Keys HF may write for the tied decoder; they are the word embeddings and predictions.bias.
TIED = ("predictions.decoder.weight", "predictions.decoder.bias")
# What every key of a transformer layer holds (after the encoder's prefix).
HF_LAYERS = "encoder.albert_layer_groups."

# Original name under `.../inner_group_k/` -> (HF name under `...albert_layers.k.`, transposed).
_LAYER = {
    "attention_1/self/query/kernel": ("attention.query.weight", True),
    "attention_1/self/query/bias": ("attention.query.bias", False),
    "attention_1/self/key/kernel": ("attention.key.weight", True),
    "attention_1/self/key/bias": ("attention.key.bias", False),
    "attention_1/self/value/kernel": ("attention.value.weight", True),
    "attention_1/self/value/bias": ("attention.value.bias", False),
    "attention_1/output/dense/kernel": ("attention.dense.weight", True),
    "attention_1/output/dense/bias": ("attention.dense.bias", False),
    "LayerNorm/gamma": ("attention.LayerNorm.weight", False),
    "LayerNorm/beta": ("attention.LayerNorm.bias", False),
    "ffn_1/intermediate/dense/kernel": ("ffn.weight", True),
    "ffn_1/intermediate/dense/bias": ("ffn.bias", False),
    "ffn_1/intermediate/output/dense/kernel": ("ffn_output.weight", True),
    "ffn_1/intermediate/output/dense/bias": ("ffn_output.bias", False),
    "LayerNorm_1/gamma": ("full_layer_layer_norm.weight", False),
    "LayerNorm_1/beta": ("full_layer_layer_norm.bias", False),
}
_LAYER_NAME = re.compile(r"bert/encoder/transformer/group_(\d+)/inner_group_(\d+)/(.+)")

# The other original names -> (HF key, `albert.` prefixed, transposed). The heads' output
# weights are [labels, H] in both layouts.
_FIXED = {
    "bert/embeddings/word_embeddings": ("embeddings.word_embeddings.weight", True, False),
    "bert/embeddings/token_type_embeddings": ("embeddings.token_type_embeddings.weight", True,
                                              False),
    "bert/embeddings/position_embeddings": ("embeddings.position_embeddings.weight", True,
                                            False),
    "bert/embeddings/LayerNorm/gamma": ("embeddings.LayerNorm.weight", True, False),
    "bert/embeddings/LayerNorm/beta": ("embeddings.LayerNorm.bias", True, False),
    "bert/encoder/embedding_hidden_mapping_in/kernel": (PROJECTION + ".weight", True, True),
    "bert/encoder/embedding_hidden_mapping_in/bias": (PROJECTION + ".bias", True, False),
    "bert/pooler/dense/kernel": ("pooler.weight", True, True),
    "bert/pooler/dense/bias": ("pooler.bias", True, False),
    "cls/predictions/transform/dense/kernel": ("predictions.dense.weight", False, True),
    "cls/predictions/transform/dense/bias": ("predictions.dense.bias", False, False),
    "cls/predictions/transform/LayerNorm/gamma": ("predictions.LayerNorm.weight", False, False),
    "cls/predictions/transform/LayerNorm/beta": ("predictions.LayerNorm.bias", False, False),
    "cls/predictions/output_bias": ("predictions.bias", False, False),
    "cls/seq_relationship/output_weights": ("sop_classifier.classifier.weight", False, False),
    "cls/seq_relationship/output_bias": ("sop_classifier.classifier.bias", False, False),
    "output_weights": ("classifier.weight", False, False),
    "output_bias": ("classifier.bias", False, False),
    "cls/squad/output_weights": ("qa_outputs.weight", False, False),
    "cls/squad/output_bias": ("qa_outputs.bias", False, False),
}


def hf_key(name, encoder_prefix=PREFIX):
  """The HF key of an original variable name, and whether its value is transposed.

  Args:
    name: an original TF1 name (`bert/...`, `cls/...`, `output_weights`, ...).
    encoder_prefix: prepended to the encoder's keys: "albert." in the task models' checkpoints,
      "" in an AlbertModel's.

  Returns:
    (key, transposed).

  Raises:
    KeyError: for a name that has no HF counterpart (naming it).
  """
  match = _LAYER_NAME.fullmatch(name)
  if match and match.group(3) in _LAYER:
    group, inner, rest = match.groups()
    suffix, transposed = _LAYER[rest]
    return (f"{encoder_prefix}encoder.albert_layer_groups.{group}.albert_layers.{inner}."
            f"{suffix}", transposed)
  if name not in _FIXED:
    raise errors.MissingKeyError(f"variable {name} has no Hugging Face counterpart")
  key, prefixed, transposed = _FIXED[name]
  return (encoder_prefix + key if prefixed else key), transposed
