"""The tasks, one package each (the fine-tuning tasks classifier, race, squad, ..., and
pretraining): its data reading, features, objective, job and export, on top of what every task
shares (albert_tf.finetuning, albert_tf.export, albert_tf.training, albert_tf.models). Nothing
outside albert_tf.tasks imports a task, except its binary (albert_tf/run_<task>.py).

A task's `__init__.py` imports nothing (no TensorFlow: albert_tf.registry reads it on
`import albert_tf`) and declares the Keras classes the task brings, class name -> the module that
registers it:

  MODELS = {"AlbertTokenClassifier": "albert_tf.tasks.ner.model"}  # also albert_tf.<name>
  LAYERS = {"TokenLogits": "albert_tf.tasks.ner.model"}            # optional: other classes

and, for a model the Hugging Face export and loader handle, its head there (plain data:
albert_tf.checkpoints.hf_heads.HfHead's fields; a model without an entry takes the one of the class
it derives from):

  HF_HEADS = {"AlbertTokenClassifier": {"head": "token_classifier",
                                        "architecture": "AlbertForTokenClassification",
                                        "pooler": False}}

See README.md, "Adding a task".
"""
