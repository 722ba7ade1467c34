"""The original's pretraining losses and per-example quantities, in one place."""

import tensorflow as tf


def masked_lm_loss(logits: tf.Tensor, label_ids: tf.Tensor,
                   label_weights: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
  """Weighted MLM loss: sum(w * nll) / (sum(w) + 1e-5), as the original.

  Args:
    logits: float tensor [B, P, V] (AlbertPretrainer's `masked_lm_logits`).
    label_ids: int tensor [B, P], the original tokens.
    label_weights: float tensor [B, P]: 1 for real predictions, 0 for padding.

  Returns:
    (loss float32 scalar, per-example nll float32 [B*P], log_probs float32 [B*P, V]).
  """
  vocab_size = tf.shape(logits)[-1]
  log_probs = tf.nn.log_softmax(tf.reshape(tf.cast(logits, tf.float32), [-1, vocab_size]))
  label_ids = tf.reshape(label_ids, [-1])
  label_weights = tf.reshape(tf.cast(label_weights, tf.float32), [-1])
  per_example = -tf.reduce_sum(log_probs * tf.one_hot(label_ids, vocab_size), axis=-1)
  numerator = tf.reduce_sum(label_weights * per_example)
  denominator = tf.reduce_sum(label_weights) + 1e-5
  return numerator / denominator, per_example, log_probs


def sentence_order_loss(logits: tf.Tensor,
                        labels: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
  """Mean softmax cross-entropy of the SOP head, as the original.

  Args:
    logits: float tensor [B, 2] (AlbertPretrainer's `sentence_order_logits`).
    labels: int tensor [B] or [B, 1]: 0 in order, 1 swapped.

  Returns:
    (loss float32 scalar, per-example nll float32 [B], log_probs float32 [B, 2]).
  """
  log_probs = tf.nn.log_softmax(tf.cast(logits, tf.float32), axis=-1)
  labels = tf.reshape(labels, [-1])
  per_example = -tf.reduce_sum(tf.one_hot(labels, 2) * log_probs, axis=-1)
  return tf.reduce_mean(per_example), per_example, log_probs


def pretraining_losses(outputs: dict, features: dict) -> dict:
  """MLM + SOP losses of an AlbertPretrainer's outputs on a batch of pretraining features.

  Args:
    outputs: an AlbertPretrainer's outputs (masked_lm_logits, sentence_order_logits).
    features: a dict holding masked_lm_ids int [B, P], masked_lm_weights float [B, P] and
      next_sentence_labels int [B] or [B, 1] (the original's feature name for the
      sentence-order label).

  Returns:
    A dict: total_loss, masked_lm_loss, sentence_order_loss (float32 scalars);
    masked_lm_example_loss [B*P], masked_lm_log_probs [B*P, V], sentence_order_example_loss
    [B], sentence_order_log_probs [B, 2].
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


def classification_losses(logits: tf.Tensor, labels: tf.Tensor,
                          regression: bool = False) -> dict:
  """The original classifier's outputs and loss (classifier_utils.create_model).

  Args:
    logits: float tensor [B, C] (AlbertClassifier's `logits`).
    labels: int tensor [B] (float [B] for regression, where C == 1).
    regression: bool. Squared error on a single score instead of cross-entropy.

  Returns:
    A dict of float32 tensors: `loss` (the mean over the batch), `per_example_loss` [B],
    `probabilities`, `logits`, `predictions`. Classification: softmax probabilities [B, C],
    the logits [B, C], argmax predictions int32 [B]. Regression: `probabilities` are the raw
    logits [B, 1], `logits` and `predictions` them squeezed to [B].
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
