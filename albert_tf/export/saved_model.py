"""SavedModel export with serving signatures (TF Serving's <export_dir>/<version>/ layout).

Signatures (all batch-major, any batch size):
  serving_default    text string [B] -> pooled_output [B, H], sequence_output [B, T, H],
                     input_ids, input_mask [B, T] (T = max_seq_length; tokenized in the graph;
                     the encoder runs on the batch's longest sequence rounded up to a multiple
                     of 8, and sequence_output is zero past it)
  serving_text_pair  text, text_b string [B] -> the same, for sentence pairs
  tokens             input_ids, input_mask, segment_ids int32 [B, T], T <= max_position_embeddings
                     -> pooled_output, sequence_output
  mlm                tokens' inputs + mlm_positions int32 [B, P] -> mlm_logits [B, P, V]
  sop_log_probs      tokens' inputs -> sop_log_probs [B, 2]
                     (export_saved_model leaves mlm and sop_log_probs out when the checkpoint
                     lacks their head: see heads_missing; --allow_random_heads keeps them)
  tokenization_info  () -> vocab_file (the SentencePiece model or WordPiece vocab.txt asset),
                     do_lower_case, max_seq_length

IdsServingModule exports the same model without the raw-text signatures: tokens, mlm,
sop_log_probs and tokenization_info only. Its graph holds no tensorflow-text op (the in-graph
tokenizer is built, to check the tokenizer file, but not kept), so a TensorFlow without
tensorflow-text loads it: `saved_model_cli run`, TF Serving builds without TF Text's ops, Python
that cannot install tensorflow-text.

Requests are checked in the graph (see serving_inputs): a wrong rank, shapes that disagree,
length 0 or over max_position_embeddings, ids outside the tables, text batches of different sizes
fail with a message naming the input, what was expected and what came.

Raw-text signatures run the encoder only over the batch's longest real sequence (rounded up to a
multiple of 8, as the fine-tuning batches): an 8-word request costs what 16 positions cost, not
max_seq_length. Padded keys get -10000 in the attention logits, which is exactly 0 after the
softmax, so outputs at real positions equal the fully padded run's up to float summation order.

Precision: `--serving_precision=bfloat16` exports (see training.precision.serving_policy) hold
their weights in bfloat16, LayerNorm's in float32, and compute in bfloat16 (softmax and LayerNorm
in float32); every float output is float32.
"""

import functools
import os

import tensorflow as tf

from albert_tf.core import errors
from albert_tf.core import io
from albert_tf.core.config import check_max_seq_length
from albert_tf.export.serving_inputs import check_texts, check_token_inputs
from albert_tf.data.trimming import trim_batch
from albert_tf.export.staging import write_directory_atomically
from albert_tf.export.tokenizer_arguments import old_tokenizer_arguments
from albert_tf.tokenization.in_graph_choice import in_graph_tokenizer
from albert_tf.tokenization.vocab_check import check_vocab_fits


# The signatures' tf.function: traced without autograph. Their control flow is Python's, fixed
# while tracing (tf.cond where a tensor decides); autograph would convert the in-graph tokenizers
# and input checks they call at every export, seconds of CPU (docs/speed.md, Start-up).
signature_function = functools.partial(tf.function, autograph=False)


def ids_spec(name):
  return tf.TensorSpec([None, None], tf.int32, name=name)


def as_float32(outputs):
  """{name: tensor} with floating tensors (bfloat16 under --serving_precision=bfloat16) cast to
  float32, the dtype clients and TF Serving's signatures expect."""
  return {name: tf.cast(value, tf.float32) if value.dtype.is_floating else value
          for name, value in outputs.items()}


def pad_positions(x, length, value=0):
  """x [B, L, ...] -> [B, length, ...], filled with `value` past L (L <= length). The result's
  static shape names `length` and x's trailing sizes (the signatures' documented shapes)."""
  pad = length - tf.shape(x)[1]
  paddings = [[0, 0], [0, pad]] + [[0, 0]] * (x.shape.rank - 2)
  padded = tf.pad(x, paddings, constant_values=tf.cast(value, x.dtype))
  padded.set_shape([x.shape[0], length] + x.shape[2:].as_list())
  return padded


class ModelServingModule(tf.Module):
  """What every export holds: the model's weights, its config's limits, its tokenizer's file
  (SentencePiece model, or WordPiece vocab.txt given only `vocab_file`) as an asset, the
  tokenization_info signature, and the checks of requests in token ids. The in-graph tokenizer
  is built (it checks the file) and handed to hold_tokenizer, which keeps it only in modules that
  tokenize in the graph: one of this class alone holds no tensorflow-text op.

  Args:
    model: the Keras model to serve, with `.config` (an AlbertConfig).
    tokenizer: a settings.TokenizerSettings (0.3's spm_model_file, do_lower_case and vocab_file
      arguments work until 0.4.0: export.tokenizer_arguments).
    max_seq_length: the length raw text is packed to (at most max_position_embeddings).
    name: the tf.Module's name.
    config_file: the config's file, where known: named when max_seq_length or the tokenizer
      does not fit the config (requests would fail at serve time).
  """

  @old_tokenizer_arguments(
      lambda self, model, spm_model_file, do_lower_case, max_seq_length, name,
      config_file=None, vocab_file=None: None)
  def __init__(self, model, tokenizer, max_seq_length, name, config_file=None):
    super().__init__(name=name)
    config = model.config
    # TF Serving's loader (C++, as tf.compat.v1.saved_model.loader) finds only the variables the
    # SavedModel's object graph holds as tf.Variables. A Keras 3 model's weights are Keras
    # variables wrapping them: saved, but not found at serve time ("Could not find variable
    # embeddings/position_embeddings", keras-team/keras#20095). `.value` is the wrapped
    # tf.Variable (outside a layer call, where no autocast applies).
    self.model_weights = [weight.value for weight in model.weights]
    check_max_seq_length(max_seq_length, config, config_file or "the exported model's config")
    in_graph = in_graph_tokenizer(tokenizer.spm_model_file, tokenizer.vocab_file,
                                  tokenizer.do_lower_case)
    self.hold_tokenizer(in_graph)
    check_vocab_fits(in_graph.vocab_size, config.vocab_size, in_graph.model_file, config_file)
    self.vocab_file = tf.saved_model.Asset(in_graph.model_file)
    self.do_lower_case = tokenizer.do_lower_case
    self.max_seq_length = max_seq_length
    self.vocab_size = config.vocab_size
    self.type_vocab_size = config.type_vocab_size
    self.max_position_embeddings = config.max_position_embeddings

  def hold_tokenizer(self, tokenizer):
    """Keeps the in-graph tokenizer where the signatures use it (TextServingModule). Here it is
    dropped: a tracked tokenizer puts its tensorflow-text ops in the SavedModel even when no
    signature calls it, and a TensorFlow without them cannot load the export at all."""
    del tokenizer

  def checked_tokens(self, features, mlm_positions=None):
    """A tokens-style request's tensors, run only once they fit this model (see
    serving_inputs.check_token_inputs). Returns (features, mlm_positions)."""
    return check_token_inputs(features, self.vocab_size, self.type_vocab_size,
                              self.max_position_embeddings, mlm_positions)

  def info(self):
    """tokenization_info's outputs; subclasses add their settings."""
    return {"vocab_file": self.vocab_file.asset_path,
            "do_lower_case": tf.constant(self.do_lower_case),
            "max_seq_length": tf.constant(self.max_seq_length)}

  @signature_function(input_signature=[])
  def tokenization_info(self):
    return self.info()


class TextServingModule(ModelServingModule):
  """What every raw-text export holds: a ModelServingModule that keeps the in-graph tokenizer
  (`tokenizer`) and packs raw text with it."""

  def hold_tokenizer(self, tokenizer):
    self.tokenizer = tokenizer

  def pack_texts(self, text, text_b=None):
    """Raw text [B] (and text_b [B] for pairs), checked, tokenized and packed in the graph as
    the original's features: input_ids, input_mask, segment_ids [B, max_seq_length]."""
    if text_b is None:
      return self.tokenizer.pack(check_texts(text=text)["text"],
                                 max_seq_length=self.max_seq_length)
    texts = check_texts(text=text, text_b=text_b)
    return self.tokenizer.pack(texts["text"], texts["text_b"], self.max_seq_length)

  def trimmed(self, features):
    """Packed features [B, T] cut to [B, L]: L is the batch's longest real sequence rounded up
    to a multiple of 8 (at most T). Only all-padding columns go."""
    return trim_batch(features, self.max_seq_length)


class TokensSignature:
  """The `tokens` signature, mixed into a ModelServingModule subclass that gives
  outputs(features), the outputs of checked or packed features [B, T]."""

  def outputs(self, features):
    """The serving outputs of (packed or checked) features [B, T]; subclasses define it."""
    raise NotImplementedError

  @signature_function(input_signature=[ids_spec("input_ids"), ids_spec("input_mask"),
                                       ids_spec("segment_ids")])
  def tokens(self, input_ids, input_mask, segment_ids):
    features, _ = self.checked_tokens({"input_ids": input_ids, "input_mask": input_mask,
                                       "segment_ids": segment_ids})
    return self.outputs(features)


class TokensServingModule(TokensSignature, TextServingModule):
  """A raw-text export that also serves token ids (the `tokens` signature): subclasses give
  outputs(features)."""


# The pretraining heads' signatures, and the scope of each head's original variable names.
HEAD_SIGNATURES = {"mlm": "cls/predictions/", "sop_log_probs": "cls/seq_relationship/"}


def heads_missing(report):
  """{signature: the head variables a checkpoint load (its LoadReport) did not find}, for each
  of HEAD_SIGNATURES whose head is not wholly the checkpoint's: such a signature would serve
  freshly initialised weights."""
  missing = {}
  for signature, scope in HEAD_SIGNATURES.items():
    names = [name for name in report.missing if name.startswith(scope)]
    if names:
      missing[signature] = names
  return missing


class PretrainerSignatures(TokensSignature):
  """An AlbertPretrainer's signatures in token ids (tokens, mlm, sop_log_probs), mixed into a
  ModelServingModule: ServingModule adds the raw-text ones, IdsServingModule does not.
  `tokenizer`, `max_seq_length`, `config_file`: as ModelServingModule's; `head_signatures`: which
  of HEAD_SIGNATURES the export holds (all by default)."""

  @old_tokenizer_arguments(
      lambda self, pretrainer, spm_model_file, do_lower_case=True, max_seq_length=128,
      config_file=None, vocab_file=None, head_signatures=tuple(HEAD_SIGNATURES): None)
  def __init__(self, pretrainer, tokenizer, max_seq_length=128, config_file=None,
               head_signatures=tuple(HEAD_SIGNATURES)):
    super().__init__(pretrainer, tokenizer, max_seq_length, name="albert_serving",
                     config_file=config_file)
    self.pretrainer = pretrainer
    self.head_signatures = tuple(head_signatures)

  def outputs(self, features):
    out = self.pretrainer.encoder(features, training=False)
    return as_float32({"pooled_output": out["pooled_output"],
                       "sequence_output": out["sequence_output"]})

  @signature_function(input_signature=[ids_spec("input_ids"), ids_spec("input_mask"),
                                       ids_spec("segment_ids"), ids_spec("mlm_positions")])
  def mlm(self, input_ids, input_mask, segment_ids, mlm_positions):
    features, positions = self.checked_tokens(
        {"input_ids": input_ids, "input_mask": input_mask, "segment_ids": segment_ids},
        mlm_positions)
    out = self.pretrainer(dict(features, masked_lm_positions=positions), training=False)
    return as_float32({"mlm_logits": out["masked_lm_logits"]})

  @signature_function(input_signature=[ids_spec("input_ids"), ids_spec("input_mask"),
                                       ids_spec("segment_ids")])
  def sop_log_probs(self, input_ids, input_mask, segment_ids):
    features, _ = self.checked_tokens({"input_ids": input_ids, "input_mask": input_mask,
                                       "segment_ids": segment_ids})
    pooled = self.pretrainer.encoder(features, training=False)["pooled_output"]
    logits = self.pretrainer.sentence_order(pooled)
    return {"sop_log_probs": tf.nn.log_softmax(tf.cast(logits, tf.float32), axis=-1)}

  def ids_signatures(self):
    """{name: function} of the signatures in token ids, the heads' only where head_signatures
    names them."""
    signatures = {"tokens": self.tokens, "mlm": self.mlm, "sop_log_probs": self.sop_log_probs}
    return {name: fn for name, fn in signatures.items()
            if name not in HEAD_SIGNATURES or name in self.head_signatures}


class ServingModule(PretrainerSignatures, TextServingModule):
  """Wraps an AlbertPretrainer and the in-graph tokenizer for export: every signature."""

  def _encode_packed(self, packed):
    out = self.outputs(self.trimmed(packed))
    out["sequence_output"] = pad_positions(out["sequence_output"], self.max_seq_length)
    out.update(input_ids=packed["input_ids"], input_mask=packed["input_mask"])
    return out

  @signature_function(input_signature=[tf.TensorSpec([None], tf.string, name="text")])
  def serve_text(self, text):
    return self._encode_packed(self.pack_texts(text))

  @signature_function(input_signature=[tf.TensorSpec([None], tf.string, name="text"),
                                       tf.TensorSpec([None], tf.string, name="text_b")])
  def serve_text_pair(self, text, text_b):
    return self._encode_packed(self.pack_texts(text, text_b))

  def signatures(self):
    return {"serving_default": self.serve_text, "serving_text_pair": self.serve_text_pair,
            **self.ids_signatures(), "tokenization_info": self.tokenization_info}


class IdsServingModule(PretrainerSignatures, ModelServingModule):
  """An AlbertPretrainer's export without the raw-text signatures (tokens, mlm, sop_log_probs,
  tokenization_info): clients send token ids, and no tensorflow-text op is in the graph."""

  def signatures(self):
    return dict(self.ids_signatures(), tokenization_info=self.tokenization_info)


def export_saved_model(module, export_dir, version):
  """Saves `module` as <export_dir>/<version>/, written under a temporary name and renamed, so
  that TF Serving (which polls export_dir) never sees a half-written version. Temporary folders
  that killed exports left in export_dir are removed first (see export.staging)."""
  if not str(version).isdigit():
    raise errors.UsageError(f"--version must be a non-negative integer (TF Serving's layout), got "
                            f"{version!r}")
  final = os.path.join(export_dir, str(int(version)))
  if io.exists(final):
    raise FileExistsError(f"{final} exists already; choose another --version")
  # Any version's leftovers: a killed export of version 3 is garbage once version 4 is exported.
  write_directory_atomically(
      final, lambda staging: tf.saved_model.save(module, staging, signatures=module.signatures()),
      stale_stems=r"\d+", legacy=True)
  return final
