"""The original (released TF1) variable names of our models' variables: one place for the map."""

from albert_tf.models.encoder import AlbertModel
from albert_tf.models.pretrainer import AlbertPretrainer

# Names in a TF1 checkpoint that are never model weights.
OPTIMIZER_SLOT_SUFFIXES = ("/adam_m", "/adam_v", "/Adam", "/Adam_1", "/Momentum", "/lamb_m",
                           "/lamb_v")
NON_MODEL_VARIABLES = ("global_step",)


def _dense(prefix, layer):
  return {f"{prefix}/kernel": layer.kernel, f"{prefix}/bias": layer.bias}


def _layer_norm(prefix, layer):
  return {f"{prefix}/gamma": layer.gamma, f"{prefix}/beta": layer.beta}


def _block(prefix, block):
  names = {}
  att = block.attention
  for part in ("query", "key", "value"):
    names.update(_dense(f"{prefix}/attention_1/self/{part}", getattr(att, part)))
  names.update(_dense(f"{prefix}/attention_1/output/dense", att.output_dense))
  names.update(_layer_norm(f"{prefix}/LayerNorm", block.attention_layer_norm))
  names.update(_dense(f"{prefix}/ffn_1/intermediate/dense", block.intermediate))
  names.update(_dense(f"{prefix}/ffn_1/intermediate/output/dense", block.ffn_output))
  names.update(_layer_norm(f"{prefix}/LayerNorm_1", block.ffn_layer_norm))
  return names


def encoder_variables(encoder, scope="bert"):
  """{original name: variable} for an AlbertModel."""
  emb = encoder.embeddings
  names = {
      f"{scope}/embeddings/word_embeddings": emb.word_embeddings,
      f"{scope}/embeddings/token_type_embeddings": emb.token_type_embeddings,
      f"{scope}/embeddings/position_embeddings": emb.position_embeddings,
  }
  names.update(_layer_norm(f"{scope}/embeddings/LayerNorm", emb.layer_norm))
  if encoder.embedding_projection is not None:
    names.update(_dense(f"{scope}/encoder/embedding_hidden_mapping_in",
                        encoder.embedding_projection))
  for g, group in enumerate(encoder.transformer.groups):
    for i, block in enumerate(group):
      names.update(_block(f"{scope}/encoder/transformer/group_{g}/inner_group_{i}", block))
  names.update(_dense(f"{scope}/pooler/dense", encoder.pooler.dense))
  return names


def pretrainer_variables(pretrainer):
  names = encoder_variables(pretrainer.encoder)
  mlm = pretrainer.masked_lm
  names.update(_dense("cls/predictions/transform/dense", mlm.transform))
  names.update(_layer_norm("cls/predictions/transform/LayerNorm", mlm.transform_layer_norm))
  names["cls/predictions/output_bias"] = mlm.output_bias
  sop = pretrainer.sentence_order
  names["cls/seq_relationship/output_weights"] = sop.output_weights
  names["cls/seq_relationship/output_bias"] = sop.output_bias
  return names


_BUILDERS = [(AlbertPretrainer, pretrainer_variables), (AlbertModel, encoder_variables)]


def register(model_class, builder):
  """Adds the name map of another model class (classifier, span labeller, ...)."""
  _BUILDERS.insert(0, (model_class, builder))


def original_variable_map(model):
  """{original TF1 name: variable} of any supported model."""
  for model_class, builder in _BUILDERS:
    if isinstance(model, model_class):
      return builder(model)
  raise TypeError(f"no original variable layout is known for {type(model).__name__}")


def is_encoder_name(name):
  return name.startswith("bert/")


def is_model_weight_name(name):
  return name not in NON_MODEL_VARIABLES and not name.endswith(OPTIMIZER_SLOT_SUFFIXES)
