"""SQuAD v1.1 / 2.0 span extraction: run_squad_v1, run_squad_v2.

Its models: AlbertSpanLabeler and AlbertSquadV2 (model.py), on the span heads of heads.py.
HF_HEADS (albert_tf.checkpoints.hf_heads.HfHead's fields): the v1 span labeler is transformers'
AlbertForQuestionAnswering, which has no pooler; transformers has no class for the v2 head, so the
Hugging Face export refuses it by its name.
"""

MODELS = {"AlbertSpanLabeler": "albert_tf.tasks.squad.model",
          "AlbertSquadV2": "albert_tf.tasks.squad.model"}
LAYERS = {"SpanLogits": "albert_tf.tasks.squad.heads", "SquadV2Head": "albert_tf.tasks.squad.heads"}
HF_HEADS = {
    "AlbertSpanLabeler": {"head": "squad_v1", "architecture": "AlbertForQuestionAnswering",
                          "pooler": False, "scopes": ("cls/squad", "span_logits", "qa_outputs")},
    "AlbertSquadV2": {"head": "squad_v2", "architecture": None,
                      "scopes": ("start_logits", "end_logits", "answer_class", "squad_v2_head")},
}
