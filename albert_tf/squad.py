"""SQuAD data and post-processing under the original squad_utils' names.

  examples = read_squad_examples("dev-v2.0.json", is_training=False)
  convert_examples_to_features(examples, tokenizer, 384, 128, 64, False, features.append, True)
  predictions, nbest, null_odds, metrics = postprocess_v2(examples, features, results, 20, 30,
                                                          5, 5, dataset)

`results` maps unique_id to the model outputs under the original's field names (see
albert_tf.tasks.squad.postprocess).
"""

from albert_tf.tasks.squad.data import (FeatureWriter, InputFeatures, SquadExample,  # noqa: F401
                                             convert_examples_to_features, read_squad_examples)
from albert_tf.tasks.squad.postprocess import (evaluate_v1, evaluate_v2,  # noqa: F401
                                                    postprocess_v1, postprocess_v2)

__all__ = ["FeatureWriter", "InputFeatures", "SquadExample", "convert_examples_to_features",
           "read_squad_examples", "evaluate_v1", "evaluate_v2", "postprocess_v1",
           "postprocess_v2"]
