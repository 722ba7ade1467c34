"""The original (released TF1) variable layout: each model names its own variables
(`original_variables()`) and the parts our object-based checkpoints hold
(`checkpoint_parts()`); these functions are what the loaders and writers call.

The transformer's names under `bert/encoder/transformer/`, by the config's parameter_sharing:
- all-shared (the original's): `group_{g}/inner_group_{i}/attention_1/self/{query,key,value}/...`,
  `.../attention_1/output/dense/...`, `.../LayerNorm/...`, `.../ffn_1/intermediate/dense/...`,
  `.../ffn_1/intermediate/output/dense/...`, `.../LayerNorm_1/...`.
- not-shared: the same, one group per layer (g = 0 .. num_hidden_layers - 1).
- shared-attention: the group's `attention_1/...` and `LayerNorm/...` as above; each layer l's own
  FFN under `group_{g}/inner_group_{i}/layer_{l}/`: `.../layer_{l}/ffn_1/intermediate/dense/...`,
  `.../layer_{l}/ffn_1/intermediate/output/dense/...`, `.../layer_{l}/LayerNorm_1/...`.
- shared-FFN: the group's `ffn_1/...` and `LayerNorm_1/...`; each layer's own
  `.../layer_{l}/attention_1/...` and `.../layer_{l}/LayerNorm/...`.
l counts all layers from 0; g is the group layer l belongs to (layers.group_index).
"""

from albert_tf.core import optimizer_table

# Names in a TF1 checkpoint that are never model weights: optimizer slots (the optimizer
# table's and other TF1 optimizers') and the step.
OPTIMIZER_SLOT_SUFFIXES = optimizer_table.slot_suffixes()
NON_MODEL_VARIABLES = ("global_step",)


def _method(model, name):
  method = getattr(model, name, None)
  if method is None:
    raise TypeError(f"no checkpoint layout is known for {type(model).__name__}: give it "
                    f"{name}() (as albert_tf.models' models have)")
  return method


def original_variable_map(model) -> dict:
  """{original TF1 name: variable} of any model that defines `original_variables()`."""
  return _method(model, "original_variables")()


def model_parts(model) -> dict:
  """{name: trackable} under which a model's weights live in our own checkpoints (the model's
  `checkpoint_parts()`)."""
  return _method(model, "checkpoint_parts")()


def encoder_variables(encoder, scope: str = "bert") -> dict:
  """{original name: variable} of an AlbertModel (its `original_variables(scope)`)."""
  return encoder.original_variables(scope)


def is_encoder_name(name: str) -> bool:
  """True for the encoder's variables (`bert/...`)."""
  return name.startswith("bert/")


def is_layer_name(name: str) -> bool:
  """True for the transformer layers' variables (`bert/encoder/transformer/...`)."""
  return name.startswith("bert/encoder/transformer/")


def is_model_weight_name(name: str) -> bool:
  """False for optimizer slots and global_step, which are never model weights."""
  return name not in NON_MODEL_VARIABLES and not name.endswith(OPTIMIZER_SLOT_SUFFIXES)
