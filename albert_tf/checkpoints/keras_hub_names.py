"""keras-hub's ALBERT weight names: each keras-hub weight's original (TF1) name, and how its value
is reshaped into the original's (keras' EinsumDense keeps the attention kernels per head).

Weights go by their layers' names (what keras-hub chose: `pooled_dense/0`,
`group_0_inner_layer_0/self_attention_layer/query/0`), as keras_hub.read_weights reads them. No
TensorFlow here.
"""

import re

import numpy as np

# keras-hub weight name -> original name (backbone: model.weights.h5; heads: task.weights.h5).
_FIXED = {
    "token_embedding/0": "bert/embeddings/word_embeddings",
    "position_embedding/0": "bert/embeddings/position_embeddings",
    "segment_embedding/0": "bert/embeddings/token_type_embeddings",
    "embeddings_layer_norm/0": "bert/embeddings/LayerNorm/gamma",
    "embeddings_layer_norm/1": "bert/embeddings/LayerNorm/beta",
    "embedding_projection/0": "bert/encoder/embedding_hidden_mapping_in/kernel",
    "embedding_projection/1": "bert/encoder/embedding_hidden_mapping_in/bias",
    "pooled_dense/0": "bert/pooler/dense/kernel",
    "pooled_dense/1": "bert/pooler/dense/bias",
    # AlbertTextClassifier: Dense(num_classes) on the pooled output; kernel [H, L] is
    # transposed to the original's [L, H] (see _HEAD_TRANSPOSED).
    "logits/0": "output_weights",
    "logits/1": "output_bias",
    # AlbertMaskedLM: the decoder is tied to the token embedding, as the original's.
    "mlm_head/intermediate_dense/0": "cls/predictions/transform/dense/kernel",
    "mlm_head/intermediate_dense/1": "cls/predictions/transform/dense/bias",
    "mlm_head/intermediate_layer_norm/0": "cls/predictions/transform/LayerNorm/gamma",
    "mlm_head/intermediate_layer_norm/1": "cls/predictions/transform/LayerNorm/beta",
    "mlm_head/0": "cls/predictions/output_bias",
}
_HEAD_TRANSPOSED = ("logits/0",)

# Under `group_{g}_inner_layer_{i}/` -> (original name under `.../group_g/inner_group_i/`, how
# keras' EinsumDense shapes fold into the original's 2-D ones).
_FOLD_HEADS_OUT = "[H, N, D] -> [H, N*D]"   # query/key/value kernels
_FOLD_BIAS = "[N, D] -> [N*D]"
_FOLD_HEADS_IN = "[N, D, H] -> [N*D, H]"    # the attention output kernel
_LAYER = {
    "self_attention_layer/query/0": ("attention_1/self/query/kernel", _FOLD_HEADS_OUT),
    "self_attention_layer/query/1": ("attention_1/self/query/bias", _FOLD_BIAS),
    "self_attention_layer/key/0": ("attention_1/self/key/kernel", _FOLD_HEADS_OUT),
    "self_attention_layer/key/1": ("attention_1/self/key/bias", _FOLD_BIAS),
    "self_attention_layer/value/0": ("attention_1/self/value/kernel", _FOLD_HEADS_OUT),
    "self_attention_layer/value/1": ("attention_1/self/value/bias", _FOLD_BIAS),
    "self_attention_layer/attention_output/0": ("attention_1/output/dense/kernel",
                                                _FOLD_HEADS_IN),
    "self_attention_layer/attention_output/1": ("attention_1/output/dense/bias", None),
    "self_attention_layer_norm/0": ("LayerNorm/gamma", None),
    "self_attention_layer_norm/1": ("LayerNorm/beta", None),
    "feedforward_intermediate_dense/0": ("ffn_1/intermediate/dense/kernel", None),
    "feedforward_intermediate_dense/1": ("ffn_1/intermediate/dense/bias", None),
    "feedforward_output_dense/0": ("ffn_1/intermediate/output/dense/kernel", None),
    "feedforward_output_dense/1": ("ffn_1/intermediate/output/dense/bias", None),
    "feedforward_layer_norm/0": ("LayerNorm_1/gamma", None),
    "feedforward_layer_norm/1": ("LayerNorm_1/beta", None),
}
_LAYER_NAME = re.compile(r"group_(\d+)_inner_layer_(\d+)/(.+)")
PROJECTION = ("bert/encoder/embedding_hidden_mapping_in/kernel",
              "bert/encoder/embedding_hidden_mapping_in/bias")


def _fold(value, how):
  """`value` reshaped as `how` (a _FOLD_* rule, or None) says."""
  if how == _FOLD_HEADS_OUT:
    return value.reshape(value.shape[0], -1)
  if how == _FOLD_BIAS:
    return value.reshape(-1)
  if how == _FOLD_HEADS_IN:
    return value.reshape(-1, value.shape[-1])
  return value


def original_name(key):
  """The original TF1 name of keras-hub weight `key`, and how its value is reshaped (None: as
  it is; see original_value), or (None, None) for a weight the original has no counterpart of."""
  match = _LAYER_NAME.fullmatch(key)
  if match and match.group(3) in _LAYER:
    group, inner, rest = match.groups()
    name, how = _LAYER[rest]
    return f"bert/encoder/transformer/group_{group}/inner_group_{inner}/{name}", how
  if key in _FIXED:
    return _FIXED[key], ("transpose" if key in _HEAD_TRANSPOSED else None)
  return None, None


def original_value(value, how):
  """A keras-hub weight's value in the original's shape, float32 and contiguous.

  Args:
    value: the array as keras-hub keeps it.
    how: what original_name gave with the weight's name ("transpose", a fold, or None).
  """
  value = value.T if how == "transpose" else _fold(value, how)
  return np.ascontiguousarray(value, dtype=np.float32)
