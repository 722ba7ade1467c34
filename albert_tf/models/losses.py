"""The original's pretraining losses and per-example quantities, in one place."""

import tensorflow as tf


def masked_lm_loss(logits, label_ids, label_weights):
  """Weighted MLM loss: sum(w * nll) / (sum(w) + 1e-5), as the original.

  logits [B, P, V]; label_ids int [B, P]; label_weights float [B, P].
  Returns (loss scalar, per-example nll [B*P], log_probs [B*P, V]).
  """
  vocab_size = tf.shape(logits)[-1]
  log_probs = tf.nn.log_softmax(tf.reshape(tf.cast(logits, tf.float32), [-1, vocab_size]))
  label_ids = tf.reshape(label_ids, [-1])
  label_weights = tf.reshape(tf.cast(label_weights, tf.float32), [-1])
  per_example = -tf.reduce_sum(log_probs * tf.one_hot(label_ids, vocab_size), axis=-1)
  numerator = tf.reduce_sum(label_weights * per_example)
  denominator = tf.reduce_sum(label_weights) + 1e-5
  return numerator / denominator, per_example, log_probs


def sentence_order_loss(logits, labels):
  """Mean softmax cross-entropy of the SOP head, as the original.

  logits [B, 2]; labels int [B] or [B, 1]. Returns (loss, per-example nll [B], log_probs [B, 2]).
  """
  log_probs = tf.nn.log_softmax(tf.cast(logits, tf.float32), axis=-1)
  labels = tf.reshape(labels, [-1])
  per_example = -tf.reduce_sum(tf.one_hot(labels, 2) * log_probs, axis=-1)
  return tf.reduce_mean(per_example), per_example, log_probs


def pretraining_losses(outputs, features):
  """MLM + SOP losses of an AlbertPretrainer's outputs on a batch of pretraining features.

  `features` holds masked_lm_ids, masked_lm_weights and next_sentence_labels (the original's
  feature name for the sentence-order label). Returns a dict of scalars and per-example tensors.
  """
  mlm, mlm_per_example, mlm_log_probs = masked_lm_loss(
      outputs["masked_lm_logits"], features["masked_lm_ids"], features["masked_lm_weights"])
  sop, sop_per_example, sop_log_probs = sentence_order_loss(
      outputs["sentence_order_logits"], features["next_sentence_labels"])
  return {
      "total_loss": mlm + sop,
      "masked_lm_loss": mlm,
      "masked_lm_example_loss": mlm_per_example,
      "masked_lm_log_probs": mlm_log_probs,
      "sentence_order_loss": sop,
      "sentence_order_example_loss": sop_per_example,
      "sentence_order_log_probs": sop_log_probs,
  }


def classification_losses(logits, labels, regression=False):
  """The original classifier's outputs and loss (classifier_utils.create_model).

  logits [B, C]; labels int [B] (float [B] for regression, where C == 1). Classification:
  softmax probabilities [B, C], argmax predictions [B], cross-entropy per example. Regression:
  `probabilities` are the raw logits [B, 1], `logits` and `predictions` them squeezed to [B], the
  per-example loss the squared error. `loss` is the mean over the batch.
  """
  logits = tf.cast(logits, tf.float32)
  if regression:
    squeezed = tf.squeeze(logits, [-1])
    per_example = tf.square(squeezed - tf.cast(tf.reshape(labels, [-1]), tf.float32))
    return {"loss": tf.reduce_mean(per_example), "per_example_loss": per_example,
            "probabilities": logits, "logits": squeezed, "predictions": squeezed}
  log_probs = tf.nn.log_softmax(logits, axis=-1)
  one_hot = tf.one_hot(tf.reshape(labels, [-1]), tf.shape(logits)[-1], dtype=tf.float32)
  per_example = -tf.reduce_sum(one_hot * log_probs, axis=-1)
  probabilities = tf.nn.softmax(logits, axis=-1)
  return {"loss": tf.reduce_mean(per_example), "per_example_loss": per_example,
          "probabilities": probabilities, "logits": logits,
          "predictions": tf.argmax(probabilities, axis=-1, output_type=tf.int32)}
