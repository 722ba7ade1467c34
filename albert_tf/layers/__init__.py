"""Keras layers of ALBERT, each reproducing one piece of the original graph.

Every layer is registered with Keras (`keras.saving.register_keras_serializable(package=
"albert_tf")`) when this package is imported, and round-trips through get_config/from_config.
"""

from albert_tf.layers.activations import gelu, get_activation
from albert_tf.layers.attention import AlbertAttention
from albert_tf.layers.common import Dense, LayerNorm, attention_mask_adder, layer_norm_variables
from albert_tf.layers.embeddings import AlbertEmbeddings
from albert_tf.layers.heads import MaskedLMHead, PooledLogits, Pooler
from albert_tf.layers.transformer import AttentionFFNBlock, SharedTransformer, group_index
from albert_tf.core import deprecation as _deprecation

# SQuAD's heads moved to their task's folder.
__getattr__ = _deprecation.moved_names(__name__, {
    "SpanLogits": "albert_tf.tasks.squad.heads",
    "SquadV2Head": "albert_tf.tasks.squad.heads",
})
