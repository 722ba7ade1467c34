"""Named-entity recognition (token classification) on CoNLL-2003-format data.

Imports no TensorFlow: `MODELS` names the modules that register this task's Keras models (the
task seam imports them when Keras needs the classes); `HF_HEADS` is the tagger's Hugging Face
side (albert_tf.checkpoints.hf_heads.HfHead's fields): transformers' AlbertForTokenClassification,
which has no pooler. Its head has a sentence classifier's names and shape: a checkpoint's is told
a tagger's by the tag names beside it, not by its weights' names (no scopes).
"""

MODELS = {"AlbertTokenClassifier": "albert_tf.tasks.ner.model"}
HF_HEADS = {"AlbertTokenClassifier": {"head": "token_classifier",
                                      "architecture": "AlbertForTokenClassification",
                                      "pooler": False}}
