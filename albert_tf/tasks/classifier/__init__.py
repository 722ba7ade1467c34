"""GLUE-style sentence (pair) classification and regression: run_classifier.

Its model lives in albert_tf.models, where checkpoint conversion (HF, released layout) reaches it.
"""

MODELS = {"AlbertClassifier": "albert_tf.models.classifier"}
