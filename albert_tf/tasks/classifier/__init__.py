"""GLUE-style sentence (pair) classification and regression: run_classifier, on the GLUE tasks
or on your own CSV/TSV/JSONL files (single-label, multi-label, regression).

Its single-label model lives in albert_tf.models, where checkpoint conversion (HF, released
layout) reaches it; the multi-label head is this task's own.
"""

MODELS = {"AlbertClassifier": "albert_tf.models.classifier",
          "AlbertMultiLabelClassifier": "albert_tf.tasks.classifier.multilabel"}
