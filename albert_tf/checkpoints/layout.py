"""The original (released TF1) variable names of our models' variables: one place for the map."""

from albert_tf.models.classifier import AlbertClassifier
from albert_tf.models.encoder import AlbertModel
from albert_tf.models.pretrainer import AlbertPretrainer
from albert_tf.models.span_labeler import AlbertSpanLabeler, AlbertSquadV2

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


def classifier_variables(classifier):
  """The original's fine-tuned classifier: the encoder plus top-level output_weights/bias."""
  names = encoder_variables(classifier.encoder)
  names["output_weights"] = classifier.classifier.output_weights
  names["output_bias"] = classifier.classifier.output_bias
  return names


def span_labeler_variables(model):
  """SQuAD v1.1: the encoder plus cls/squad/output_weights [2, H] and output_bias [2]."""
  names = encoder_variables(model.encoder)
  names["cls/squad/output_weights"] = model.span_logits.logits.output_weights
  names["cls/squad/output_bias"] = model.span_logits.logits.output_bias
  return names


def squad_v2_variables(model):
  """SQuAD 2.0: the encoder plus the original's start_logits/, end_logits/, answer_class/."""
  head = model.head
  names = encoder_variables(model.encoder)
  names.update(_dense("start_logits/dense", head.start_dense))
  names.update(_dense("end_logits/dense_0", head.end_dense_0))
  names.update(_layer_norm("end_logits/LayerNorm", head.end_layer_norm))
  names.update(_dense("end_logits/dense_1", head.end_dense_1))
  names.update(_dense("answer_class/dense_0", head.answer_dense_0))
  names["answer_class/dense_1/kernel"] = head.answer_dense_1.kernel
  return names


def _pretrainer_parts(model):
  return {"encoder": model.encoder, "masked_lm": model.masked_lm,
          "sentence_order": model.sentence_order}


# Per model class: its {original name: variable} map, and the parts under which our own
# (object-based) checkpoints hold it. Most specific class first.
_LAYOUTS = [
    (AlbertPretrainer, pretrainer_variables, _pretrainer_parts),
    (AlbertSpanLabeler, span_labeler_variables,
     lambda model: {"encoder": model.encoder, "span_logits": model.span_logits}),
    (AlbertSquadV2, squad_v2_variables,
     lambda model: {"encoder": model.encoder, "squad_v2_head": model.head}),
    (AlbertClassifier, classifier_variables,
     lambda model: {"encoder": model.encoder, "classifier": model.classifier}),
    (AlbertModel, encoder_variables, lambda model: {"encoder": model}),
]


def register(model_class, variables_fn, parts_fn):
  """Adds the layouts of another model class (classifier, span labeller, ...)."""
  _LAYOUTS.insert(0, (model_class, variables_fn, parts_fn))


def _layout(model):
  for model_class, variables_fn, parts_fn in _LAYOUTS:
    if isinstance(model, model_class):
      return variables_fn, parts_fn
  raise TypeError(f"no checkpoint layout is known for {type(model).__name__}")


def original_variable_map(model):
  """{original TF1 name: variable} of any supported model."""
  return _layout(model)[0](model)


def model_parts(model):
  """{name: trackable} under which a model's weights live in our own checkpoints."""
  return _layout(model)[1](model)


def is_encoder_name(name):
  return name.startswith("bert/")


def is_model_weight_name(name):
  return name not in NON_MODEL_VARIABLES and not name.endswith(OPTIMIZER_SLOT_SUFFIXES)
