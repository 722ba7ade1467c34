"""SavedModel export with serving signatures (TF Serving's <export_dir>/<version>/ layout).

Signatures (all batch-major, any batch size):
  serving_default    text string [B] -> pooled_output [B, H], sequence_output [B, T, H],
                     input_ids, input_mask [B, T] (T = max_seq_length; tokenized in the graph)
  serving_text_pair  text, text_b string [B] -> the same, for sentence pairs
  tokens             input_ids, input_mask, segment_ids int32 [B, T], T <= max_position_embeddings
                     -> pooled_output, sequence_output
  mlm                tokens' inputs + mlm_positions int32 [B, P] -> mlm_logits [B, P, V]
  sop_log_probs      tokens' inputs -> sop_log_probs [B, 2]
  tokenization_info  () -> vocab_file (the SentencePiece model asset), do_lower_case,
                     max_seq_length
"""

import os
import shutil

import tensorflow as tf

from albert_tf.tokenization.in_graph import InGraphTokenizer


def ids_spec(name):
  return tf.TensorSpec([None, None], tf.int32, name=name)


class TextServingModule(tf.Module):
  """What every raw-text export holds: the model's config limit, the in-graph tokenizer, the
  SentencePiece model as an asset, and the tokenization_info signature."""

  def __init__(self, config, spm_model_file, do_lower_case, max_seq_length, name):
    super().__init__(name=name)
    if max_seq_length > config.max_position_embeddings:
      raise ValueError(f"max_seq_length {max_seq_length} exceeds max_position_embeddings "
                       f"({config.max_position_embeddings})")
    self.tokenizer = InGraphTokenizer(spm_model_file, do_lower_case)
    self.vocab_file = tf.saved_model.Asset(spm_model_file)
    self.do_lower_case = do_lower_case
    self.max_seq_length = max_seq_length

  def info(self):
    """tokenization_info's outputs; subclasses add their settings."""
    return {"vocab_file": self.vocab_file.asset_path,
            "do_lower_case": tf.constant(self.do_lower_case),
            "max_seq_length": tf.constant(self.max_seq_length)}

  @tf.function(input_signature=[])
  def tokenization_info(self):
    return self.info()


class ServingModule(TextServingModule):
  """Wraps an AlbertPretrainer and the in-graph tokenizer for export."""

  def __init__(self, pretrainer, spm_model_file, do_lower_case=True, max_seq_length=128):
    super().__init__(pretrainer.config, spm_model_file, do_lower_case, max_seq_length,
                     name="albert_serving")
    self.pretrainer = pretrainer

  def _encode(self, features):
    out = self.pretrainer.encoder(features, training=False)
    return {"pooled_output": out["pooled_output"], "sequence_output": out["sequence_output"]}

  def _encode_packed(self, packed):
    out = self._encode(packed)
    out.update(input_ids=packed["input_ids"], input_mask=packed["input_mask"])
    return out

  @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="text")])
  def serve_text(self, text):
    return self._encode_packed(self.tokenizer.pack(text, max_seq_length=self.max_seq_length))

  @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="text"),
                                tf.TensorSpec([None], tf.string, name="text_b")])
  def serve_text_pair(self, text, text_b):
    return self._encode_packed(self.tokenizer.pack(text, text_b, self.max_seq_length))

  @tf.function(input_signature=[ids_spec("input_ids"), ids_spec("input_mask"),
                                ids_spec("segment_ids")])
  def tokens(self, input_ids, input_mask, segment_ids):
    return self._encode({"input_ids": input_ids, "input_mask": input_mask,
                         "segment_ids": segment_ids})

  @tf.function(input_signature=[ids_spec("input_ids"), ids_spec("input_mask"),
                                ids_spec("segment_ids"), ids_spec("mlm_positions")])
  def mlm(self, input_ids, input_mask, segment_ids, mlm_positions):
    out = self.pretrainer({"input_ids": input_ids, "input_mask": input_mask,
                           "segment_ids": segment_ids, "masked_lm_positions": mlm_positions},
                          training=False)
    return {"mlm_logits": out["masked_lm_logits"]}

  @tf.function(input_signature=[ids_spec("input_ids"), ids_spec("input_mask"),
                                ids_spec("segment_ids")])
  def sop_log_probs(self, input_ids, input_mask, segment_ids):
    pooled = self.pretrainer.encoder({"input_ids": input_ids, "input_mask": input_mask,
                                      "segment_ids": segment_ids}, training=False)["pooled_output"]
    logits = self.pretrainer.sentence_order(pooled)
    return {"sop_log_probs": tf.nn.log_softmax(tf.cast(logits, tf.float32), axis=-1)}

  def signatures(self):
    return {
        "serving_default": self.serve_text,
        "serving_text_pair": self.serve_text_pair,
        "tokens": self.tokens,
        "mlm": self.mlm,
        "sop_log_probs": self.sop_log_probs,
        "tokenization_info": self.tokenization_info,
    }


def export_saved_model(module, export_dir, version):
  """Saves `module` as <export_dir>/<version>/, written under a temporary name and renamed, so
  that TF Serving (which polls export_dir) never sees a half-written version."""
  if not str(version).isdigit():
    raise ValueError(f"--version must be a non-negative integer (TF Serving's layout), got "
                     f"{version!r}")
  final = os.path.join(export_dir, str(int(version)))
  if os.path.exists(final):
    raise FileExistsError(f"{final} exists already; choose another --version")
  os.makedirs(export_dir, exist_ok=True)
  tmp = os.path.join(export_dir, f".tmp-{int(version)}-{os.getpid()}")
  shutil.rmtree(tmp, ignore_errors=True)
  try:
    tf.saved_model.save(module, tmp, signatures=module.signatures())
    os.replace(tmp, final)
  except BaseException:
    shutil.rmtree(tmp, ignore_errors=True)
    raise
  return final
