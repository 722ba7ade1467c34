"""RACE multiple-choice reading comprehension: run_race (ClassifierJob with four choices).

Its model lives in albert_tf.models, where checkpoint conversion (HF, released layout) reaches it.
"""

MODELS = {"AlbertMultipleChoice": "albert_tf.models.multiple_choice"}
