"""Named-entity recognition (token classification) on CoNLL-2003-format data.

Imports no TensorFlow: `MODELS` names the modules that register this task's Keras models (the
task seam imports them when Keras needs the classes).
"""

MODELS = {"AlbertTokenClassifier": "albert_tf.tasks.ner.model"}
