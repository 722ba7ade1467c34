"""GLUE-style sentence (pair) classification and regression: run_classifier, on the GLUE tasks
or on your own CSV/TSV/JSONL files (single-label, multi-label, regression).

Its models: AlbertClassifier (model.py, single-label and regression) and
AlbertMultiLabelClassifier (multilabel.py).
"""

MODELS = {"AlbertClassifier": "albert_tf.tasks.classifier.model",
          "AlbertMultiLabelClassifier": "albert_tf.tasks.classifier.multilabel"}
