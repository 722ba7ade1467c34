"""GLUE-style sentence (pair) classification and regression: run_classifier, on the GLUE tasks
or on your own CSV/TSV/JSONL files (single-label, multi-label, regression).

Its models: AlbertClassifier (model.py, single-label and regression) and
AlbertMultiLabelClassifier (multilabel.py). Both are transformers' AlbertForSequenceClassification
(HF_HEADS: albert_tf.checkpoints.hf_heads.HfHead's fields), told apart by the problem_type of its
config.json; without one, transformers takes one label for regression, as the export writes it.
"""

MODELS = {"AlbertClassifier": "albert_tf.tasks.classifier.model",
          "AlbertMultiLabelClassifier": "albert_tf.tasks.classifier.multilabel"}
HF_HEADS = {
    # The weights are `output_weights`/`output_bias` (released), `classifier/...` (ours),
    # `classifier.*` (HF): a tagger's and RACE's too, told apart by the files beside them.
    "AlbertClassifier": {"head": "classifier",
                         "architecture": "AlbertForSequenceClassification",
                         "scopes": ("output_weights", "output_bias", "classifier")},
    # The classifier's weights, a sigmoid per label: found as the classifier's head, then picked
    # by the problem_type saved beside the checkpoint.
    "AlbertMultiLabelClassifier": {"head": "classifier",
                                   "architecture": "AlbertForSequenceClassification",
                                   "problem_type": "multi_label_classification"},
}
