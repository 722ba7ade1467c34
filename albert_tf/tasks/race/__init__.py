"""RACE multiple-choice reading comprehension: run_race (ClassifierJob with four choices).

Its model: AlbertMultipleChoice (model.py).
"""

MODELS = {"AlbertMultipleChoice": "albert_tf.tasks.race.model"}
