"""SavedModel export of a fine-tuned AlbertClassifier: raw text in, probabilities and label out.

Signatures (batch-major, any batch size):
  serving_default    text [B] (and text_b [B] for sentence-pair tasks) string ->
                     probabilities [B, C] (regression: the raw score [B, 1]), predictions [B]
                     (class index int32; regression: the score), label [B] string (the task's
                     label name; classification only), threshold (scalar float32, only when
                     exported with one: the original's threshold_to_export, served alongside)
  tokens             input_ids, input_mask, segment_ids int32 [B, T] -> the same outputs
  tokenization_info  () -> vocab_file (the SentencePiece model or WordPiece vocab.txt asset),
                     do_lower_case, max_seq_length
"""

import math

import tensorflow as tf

from albert_tf.export.saved_model import TokensServingModule, signature_function
from albert_tf.export.tokenizer_arguments import old_tokenizer_arguments
from albert_tf.models.losses import classification_losses
from albert_tf.tasks.classifier.multilabel import multi_label_losses


class ClassifierServingModule(TokensServingModule):
  """Wraps an AlbertClassifier, its label names and the in-graph tokenizer for export.

  `tokenizer` is a settings.TokenizerSettings (0.3's spm_model_file, do_lower_case and
  vocab_file arguments work until 0.4.0: export.tokenizer_arguments)."""

  @old_tokenizer_arguments(
      lambda self, classifier, spm_model_file, label_list, pair, do_lower_case=True,
      max_seq_length=128, threshold=None, vocab_file=None, multi_label=False,
      label_separator=",": None)
  def __init__(self, classifier, tokenizer, label_list, pair, max_seq_length=128, threshold=None,
               multi_label=False, label_separator=","):
    super().__init__(classifier, tokenizer, max_seq_length, name="albert_classifier_serving")
    self.classifier = classifier
    self.regression = classifier.is_regression
    self.label_names = None if self.regression else tf.constant([str(x) for x in label_list])
    self.threshold = (None if threshold is None or math.isnan(threshold)
                      else tf.constant(threshold, tf.float32))
    self.pair = pair
    self.multi_label = multi_label
    self.label_separator = label_separator
    if multi_label and self.threshold is None:
      self.threshold = tf.constant(0.5, tf.float32)
    if pair:
      self.serve_text = signature_function(
          self._serve_pair, input_signature=[tf.TensorSpec([None], tf.string, name="text"),
                                             tf.TensorSpec([None], tf.string, name="text_b")])
    else:
      self.serve_text = signature_function(
          self._serve_single, input_signature=[tf.TensorSpec([None], tf.string, name="text")])

  def outputs(self, features):
    logits = tf.cast(self.classifier(features, training=False)["logits"], tf.float32)
    if self.multi_label:
      return self._multi_label_outputs(logits)
    labels = tf.zeros(tf.shape(logits)[:1], tf.float32 if self.regression else tf.int32)
    out = classification_losses(logits, labels, self.regression)
    result = {"probabilities": out["probabilities"], "predictions": out["predictions"]}
    if not self.regression:
      result["label"] = tf.gather(self.label_names, out["predictions"])
    if self.threshold is not None:
      result["threshold"] = self.threshold
    return result

  def _multi_label_outputs(self, logits):
    out = multi_label_losses(logits, tf.zeros(tf.shape(logits), tf.int32), self.threshold)
    names = tf.broadcast_to(self.label_names, tf.shape(logits))
    chosen = tf.ragged.boolean_mask(names, out["predictions"] > 0)
    return {"probabilities": out["probabilities"], "predictions": out["predictions"],
            "label": tf.strings.reduce_join(chosen, axis=-1, separator=self.label_separator),
            "threshold": self.threshold}

  def _serve_single(self, text):
    return self.outputs(self.trimmed(self.pack_texts(text)))

  def _serve_pair(self, text, text_b):
    return self.outputs(self.trimmed(self.pack_texts(text, text_b)))

  def signatures(self):
    return {"serving_default": self.serve_text, "tokens": self.tokens,
            "tokenization_info": self.tokenization_info}
