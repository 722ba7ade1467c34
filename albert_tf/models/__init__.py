"""Keras models composed from albert_tf.layers."""

from albert_tf.models.classifier import AlbertClassifier
from albert_tf.models.encoder import AlbertModel
from albert_tf.models.losses import (classification_losses, masked_lm_loss, pretraining_losses,
                                     sentence_order_loss)
from albert_tf.models.multiple_choice import AlbertMultipleChoice
from albert_tf.models.pretrainer import AlbertPretrainer
from albert_tf.models.span_labeler import AlbertSpanLabeler, AlbertSquadV2
