"""Keras layers of ALBERT, each reproducing one piece of the original graph."""

from albert_tf.layers.activations import gelu, get_activation
from albert_tf.layers.attention import AlbertAttention
from albert_tf.layers.common import Dense, attention_mask_adder
from albert_tf.layers.embeddings import AlbertEmbeddings
from albert_tf.layers.heads import MaskedLMHead, PooledLogits, Pooler
from albert_tf.layers.transformer import AttentionFFNBlock, SharedTransformer, group_index
