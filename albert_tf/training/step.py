"""One pretraining update: forward, MLM + SOP loss, backward, global-norm clip, optimizer."""

import tensorflow as tf

from albert_tf.checkpoints.layout import original_variable_map
from albert_tf.models.losses import pretraining_losses
from albert_tf.optimization import clip_by_global_norm


def build_optimizer_for(model, optimizer):
  """Creates the optimizer's slots for the model's trainable variables, naming each variable by
  its original TF1 name so that the decay / adaptation exclusions match the original's."""
  names = {id(v): n for n, v in original_variable_map(model).items()}
  optimizer.build(model.trainable_variables, names)
  return optimizer


def pretraining_gradients(model, features, training=True):
  """Returns (losses dict, gradients aligned with model.trainable_variables)."""
  with tf.GradientTape() as tape:
    outputs = model(features, training=training)
    losses = pretraining_losses(outputs, features)
  grads = tape.gradient(losses["total_loss"], model.trainable_variables)
  return losses, grads


def apply_update(model, optimizer, grads, learning_rate, clip_norm=1.0):
  grads = clip_by_global_norm(grads, clip_norm)  # measures embedding slices as the original
  return optimizer.apply_gradients(zip(grads, model.trainable_variables), learning_rate)


def pretraining_step(model, optimizer, features, learning_rate, clip_norm=1.0):
  """One full update on one replica's batch; returns the losses before the update."""
  losses, grads = pretraining_gradients(model, features)
  apply_update(model, optimizer, grads, learning_rate, clip_norm)
  return losses
