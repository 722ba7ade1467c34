"""RACE multiple-choice reading comprehension: run_race (the shared ClassificationJob of
albert_tf.finetuning with four choices).

Its model: AlbertMultipleChoice (model.py), transformers' AlbertForMultipleChoice (HF_HEADS:
albert_tf.checkpoints.hf_heads.HfHead's fields). Its head is a one-label classifier's by its
names, told apart by its run's files (no scopes); its config.json names no labels (one score per
choice: a config's num_labels, e.g. of the HF classifier the model started from, would read as
classes).
"""

MODELS = {"AlbertMultipleChoice": "albert_tf.tasks.race.model"}
HF_HEADS = {"AlbertMultipleChoice": {"head": "multiple_choice",
                                     "architecture": "AlbertForMultipleChoice",
                                     "labels": False}}
