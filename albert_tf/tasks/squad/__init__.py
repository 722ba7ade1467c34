"""SQuAD v1.1 / 2.0 span extraction: run_squad_v1, run_squad_v2.

Its models live in albert_tf.models, where checkpoint conversion (HF, released layout) reaches
them.
"""

MODELS = {"AlbertSpanLabeler": "albert_tf.models.span_labeler",
          "AlbertSquadV2": "albert_tf.models.span_labeler"}
