"""SQuAD v1.1 / 2.0 span extraction: run_squad_v1, run_squad_v2.

Its models: AlbertSpanLabeler and AlbertSquadV2 (model.py), on the span heads of heads.py.
"""

MODELS = {"AlbertSpanLabeler": "albert_tf.tasks.squad.model",
          "AlbertSquadV2": "albert_tf.tasks.squad.model"}
LAYERS = {"SpanLogits": "albert_tf.tasks.squad.heads", "SquadV2Head": "albert_tf.tasks.squad.heads"}
