"""SavedModel export of a fine-tuned AlbertTokenClassifier (NER): raw sentences in, one label per
word out, the job's features (words tokenized alone, windows, max-context) made in the graph.

Signatures (batch-major, any batch size):
  serving_default    text string [B], whitespace-separated sentences ->
                     label_ids int32 [B, W] (-1 past a sentence's words),
                     labels string [B, W] (the label names; "" past the words),
                     probabilities float32 [B, W] (of the chosen label; 0 past the words),
                     word_count int32 [B]; W is the batch's largest word count
  tokens             input_ids, input_mask, segment_ids int32 [B, T] -> logits float32 [B, T, L],
                     probabilities float32 [B, T, L] (per piece, the model's raw head)
  tokenization_info  () -> vocab_file (the SentencePiece model or WordPiece vocab.txt asset),
                     do_lower_case, max_seq_length, doc_stride, label_list (the label_list.txt
                     asset: one name a line, in label id order), label_names string [L],
                     char_level bool

How text becomes windows: each sentence is split on whitespace (as Python's str.split()) and,
for a char_level model (run_ner --char_level), each CJK character made a word of its own (as
data.split_word: "我爱iPhone手机" is 我 爱 iPhone 手 机), each
word is tokenized alone (as the features: FullTokenizer per word; a word giving no piece becomes
one unknown piece) and the word's label is read at its first piece. A sentence whose pieces do not
fit in max_seq_length - 2 is cut into SQuAD's doc_stride windows ([CLS] pieces [SEP], segment 0)
and every word is predicted from the window where its first piece has the most context
(min(left, right) + 0.01 * window length, the first such window on ties): every word gets exactly
one prediction.

The model runs on the batch's windows cut to the longest one (rounded up to a multiple of 8; see
export.saved_model): padded keys are exactly 0 after the softmax, so a sentence's outputs do not
depend on what else the batch holds, up to float summation order.
"""

import os
import tempfile
import time

import tensorflow as tf
import tensorflow_text as tf_text

from albert_tf.core import errors
from albert_tf.export.saved_model import TokensServingModule, export_saved_model, signature_function
from albert_tf.export.serving_inputs import check_texts
from albert_tf.export.tokenizer_arguments import old_tokenizer_arguments
from albert_tf.export.windows import max_context_window
from albert_tf.checkpoints.labels import LABEL_FILE
from albert_tf.tokenization.in_graph import PY_WHITESPACE, separators
from albert_tf.tokenization.text import cjk_character_class
from albert_tf.training.precision import serving_model

LABEL_LIST_FILE = LABEL_FILE  # the asset's name, as the run's output_dir names it
PAD_LABEL_ID = -1  # label_ids past a sentence's words
DEFAULT_DOC_STRIDE = 128  # run_ner's --doc_stride default


def doc_windows(lengths, max_tokens, doc_stride):
  """SQuAD's doc_stride windows over sequences of `lengths` pieces (one window for an empty one).

  Args:
    lengths: int64 [B], the pieces of each sequence.
    max_tokens: int, the pieces a window holds at most.
    doc_stride: int, the step between window starts (capped at max_tokens).

  Returns:
    {"example": int64 [N], the sequence of each window; "k": int64 [N], its index among the
    sequence's windows; "start", "len": int64 [N], its first piece and its piece count;
    "n_windows": int64 [B]}.
  """
  step = tf.constant(min(doc_stride, max_tokens), tf.int64)
  extra = tf.maximum(lengths - max_tokens, 0)
  n_windows = 1 + (extra + step - 1) // step
  example = tf.repeat(tf.range(tf.size(n_windows, out_type=tf.int64)), n_windows)
  k = tf.ragged.range(n_windows).flat_values
  start = k * step
  length = tf.minimum(tf.gather(lengths, example) - start, max_tokens)
  return {"example": example, "k": k, "start": start, "len": length, "n_windows": n_windows}


def unknown_id(tokenizer):
  """The id FullTokenizer's vocabulary gives the unknown piece ("<unk>" of a SentencePiece model,
  "[UNK]" of a WordPiece vocab.txt): what a word giving no piece becomes."""
  if hasattr(tokenizer, "sp"):
    return int(tokenizer.sp.string_to_id(tf.constant("<unk>")))
  return int(tokenizer.table.lookup(tf.constant("[UNK]")))


def check_label_names(label_names, num_labels):
  """The label names as a list of str, one per logit, each a non-empty line of label_list.txt.

  Raises:
    ValueError: naming label_names, when they are not num_labels distinct one-line names.
  """
  names = [str(name) for name in label_names]
  if len(names) != num_labels:
    raise ValueError(f"label_names has {len(names)} names but the model gives {num_labels} "
                     f"logits: {names}")
  bad = [name for name in names if not name.strip() or "\n" in name or "\r" in name]
  if bad or len(set(names)) != len(names):
    raise ValueError(f"label_names must be distinct, non-empty, one-line names, got {names}")
  return names


def _model_num_labels(model):
  """The size of the model's logits [B, T, L]: L, from a call on one [CLS] [SEP] sequence."""
  ones = tf.ones([1, 2], tf.int32)
  outputs = model({"input_ids": ones, "input_mask": ones, "segment_ids": ones * 0},
                  training=False)
  return int(outputs["logits"].shape[-1])


def serving_copy(model, serving_precision):
  """The model to export: `model`, or where its policy is not serving_precision's, a copy made
  from its config under that policy and holding its weights (bfloat16: weights in bfloat16 but
  LayerNorm's, see settings.SERVING_POLICIES)."""
  return serving_model(serving_precision, lambda: type(model).from_config(model.get_config()),
                       model)


class NerServingModule(TokensServingModule):
  """Wraps an AlbertTokenClassifier, its label names and the in-graph tokenizer for export.

  Args:
    model: a keras model taking {"input_ids", "input_mask", "segment_ids"} int32 [B, T] and giving
      {"logits": [B, T, L]}, with `.config` (an AlbertConfig).
    label_names: L names, in label id order.
    label_list_file: a file holding them one a line, shipped as the label_list asset.
    tokenizer: a settings.TokenizerSettings (SentencePiece, else WordPiece; 0.3's
      spm_model_file, vocab_file and do_lower_case arguments work until 0.4.0:
      export.tokenizer_arguments).
    max_seq_length: the window length T, [CLS] and [SEP] included.
    doc_stride: the step between windows of a sentence longer than max_seq_length - 2 pieces.
    char_level: make each CJK character of the text a word of its own (as the features of
      run_ner --char_level).
  """

  @old_tokenizer_arguments(
      lambda self, model, label_names, label_list_file, spm_model_file=None, vocab_file=None,
      do_lower_case=True, max_seq_length=128, doc_stride=DEFAULT_DOC_STRIDE,
      char_level=False: None)
  def __init__(self, model, label_names, label_list_file, tokenizer, max_seq_length=128,
               doc_stride=DEFAULT_DOC_STRIDE, char_level=False):
    super().__init__(model, tokenizer, max_seq_length, name="albert_ner_serving")
    if max_seq_length < 3:
      raise errors.UsageError(f"max_seq_length must be at least 3 ([CLS], a piece, [SEP]), got "
                              f"{max_seq_length}")
    if doc_stride < 1:
      raise errors.UsageError(f"doc_stride must be at least 1, got {doc_stride}")
    self.model = model
    self.doc_stride = doc_stride
    self.char_level = char_level
    self.label_names = tf.constant(label_names)
    self.label_list = tf.saved_model.Asset(label_list_file)
    self.unk_id = unknown_id(self.tokenizer)

  def _logits(self, features):
    return tf.cast(self.model(features, training=False)["logits"], tf.float32)

  def outputs(self, features):
    logits = self._logits(features)
    return {"logits": logits, "probabilities": tf.nn.softmax(logits, axis=-1)}

  # -- text to windows --------------------------------------------------------------------------
  def _word_pieces(self, text):
    """Each sentence's words, tokenized alone.

    Args:
      text: string [B].

    Returns:
      (words, ids, first): words string [B, (W)]; ids int32 [B, (P)] the sentence's pieces;
      first int64 [Nw] the position of each word's first piece in its sentence (Nw: the batch's
      words, in order).
    """
    if self.char_level:  # spaces around each CJK character: the split then isolates it
      text = tf.strings.regex_replace(text, cjk_character_class(), " \\0 ")
    words, _, _ = tf_text.regex_split_with_offsets(text, PY_WHITESPACE, "")  # [B, (W)]
    pieces = self.tokenizer.ids(words.flat_values)                           # [Nw, (p)]
    # A word giving no piece is one unknown piece, as the features make it.
    unknown = separators(tf.equal(pieces.row_lengths(), 0), self.unk_id)
    pieces = tf.concat([pieces, unknown], axis=1)
    ids = words.with_flat_values(pieces).merge_dims(1, 2)                    # [B, (P)]
    first = (tf.math.cumsum(pieces.row_lengths(), exclusive=True)
             - tf.gather(ids.row_starts(), words.value_rowids()))
    return words, ids, first

  def _windows(self, ids):
    """The windows of every sentence's pieces ids [B, (P)] as features [N, T] and their
    bookkeeping (doc_windows)."""
    windows = doc_windows(ids.row_lengths(), self.max_seq_length - 2, self.doc_stride)
    begin = tf.gather(ids.row_starts(), windows["example"]) + windows["start"]
    doc = tf.gather(ids.flat_values, tf.ragged.range(begin, begin + windows["len"]))
    n = tf.size(windows["example"])
    window_ids = tf.concat([tf.fill([n, 1], self.tokenizer.cls_id), doc,
                            tf.fill([n, 1], self.tokenizer.sep_id)], axis=1)
    shape = [n, self.max_seq_length]
    features = {"input_ids": window_ids.to_tensor(0, shape=shape),
                "input_mask": tf.ones_like(window_ids).to_tensor(0, shape=shape),
                "segment_ids": tf.zeros(shape, tf.int32)}
    return features, windows

  def _word_logits(self, logits, windows, sentence, first):
    """Each word's logits [Nw, L], read at its first piece in its max-context window.

    Args:
      logits: float32 [N, T', L], the windows' logits.
      windows: doc_windows' dict.
      sentence: int64 [Nw], the sentence of each word.
      first: int64 [Nw], its first piece's position in the sentence.
    """
    # SQuAD's max-context rule over sentence positions; it uses nothing of SQuAD's module.
    best = max_context_window(windows)
    k = tf.gather_nd(best, tf.stack([sentence, first], axis=1))
    window = tf.gather(tf.math.cumsum(windows["n_windows"], exclusive=True), sentence) + k
    position = first - tf.gather(windows["start"], window) + 1  # after [CLS]
    return tf.gather_nd(logits, tf.stack([window, position], axis=1))

  def _label_words(self, text):
    words, ids, first = self._word_pieces(text)
    features, windows = self._windows(ids)
    logits = self._logits(self.trimmed(features))
    word_logits = self._word_logits(logits, windows, words.value_rowids(), first)
    probabilities = tf.nn.softmax(word_logits, axis=-1)
    label_ids = tf.argmax(word_logits, axis=-1, output_type=tf.int32)
    chosen = tf.gather(probabilities, label_ids, batch_dims=1)
    per_sentence = words.with_flat_values
    return {"label_ids": per_sentence(label_ids).to_tensor(PAD_LABEL_ID),
            "labels": per_sentence(tf.gather(self.label_names, label_ids)).to_tensor(""),
            "probabilities": per_sentence(chosen).to_tensor(0.0),
            "word_count": tf.cast(words.row_lengths(), tf.int32)}

  # -- signatures -------------------------------------------------------------------------------
  @signature_function(input_signature=[tf.TensorSpec([None], tf.string, name="text")])
  def serve_text(self, text):
    text = check_texts(text=text)["text"]
    # An empty batch has no window, and the max-context choice reduces over windows.
    empty = {"label_ids": tf.zeros([0, 0], tf.int32), "labels": tf.zeros([0, 0], tf.string),
             "probabilities": tf.zeros([0, 0], tf.float32), "word_count": tf.zeros([0], tf.int32)}
    return tf.cond(tf.size(text) > 0, lambda: self._label_words(text), lambda: empty)

  def info(self):
    return dict(super().info(), doc_stride=tf.constant(self.doc_stride),
                label_list=self.label_list.asset_path, label_names=self.label_names,
                char_level=tf.constant(self.char_level))

  def signatures(self):
    return {"serving_default": self.serve_text, "tokens": self.tokens,
            "tokenization_info": self.tokenization_info}


def export_ner_saved_model(model, label_names, tokenizer_settings, max_seq_length, export_dir,
                           serving_precision="float32", doc_stride=DEFAULT_DOC_STRIDE,
                           version=None, char_level=False):
  """Exports a token classifier under <export_dir>/<version or timestamp>/, written atomically.

  Args:
    model: an AlbertTokenClassifier (see NerServingModule).
    label_names: its label names, in label id order.
    tokenizer_settings: a settings.TokenizerSettings (spm_model_file or vocab_file,
      do_lower_case).
    max_seq_length: the window length, as the job's features.
    export_dir: TF Serving's model base path (any file system).
    serving_precision: "float32" or "bfloat16" (compute; weights and outputs stay float32).
    doc_stride: the step between windows, as the job's --doc_stride.
    version: the version folder's number (default: the time in seconds).
    char_level: split CJK characters into words, as run_ner --char_level.

  Returns:
    The version directory written.
  """
  model = serving_copy(model, serving_precision)
  names = check_label_names(label_names, _model_num_labels(model))
  # The asset is copied into the SavedModel when it is saved: a local file is enough.
  with tempfile.TemporaryDirectory() as tmp:
    label_list_file = os.path.join(tmp, LABEL_LIST_FILE)
    with open(label_list_file, "w", encoding="utf-8", newline="\n") as f:
      f.write("".join(f"{name}\n" for name in names))
    module = NerServingModule(model, names, label_list_file, tokenizer_settings, max_seq_length,
                              doc_stride, char_level)
    return export_saved_model(module, os.fspath(export_dir),
                              version if version is not None else int(time.time()))
