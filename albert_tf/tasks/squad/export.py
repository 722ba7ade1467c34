"""SavedModel export of the SQuAD models: raw question and context text in, answer text out, the
original's windows and answer selection done in the graph.

Signatures (batch-major, any batch size):
  serving_default    question, context string [B] -> answer string [B], score float64 [B]
                     (start + end log-prob, v1: logits, of the answer), and for v2 null_odds
                     float [B] (the lowest answerability logit over the windows); a v2 answer is
                     "" when null_odds >= the baked-in null_score_diff_threshold, as the original;
                     an answer without a span (a context without pieces: empty, whitespace only,
                     NUL-led) is "" with score -2e6 (v2: null_odds 1e6), as predictions.json's
  features           input_ids, input_mask, segment_ids, p_mask int32 [B, T] -> the model's raw
                     outputs under the original's names (start_log_prob/end_log_prob for v1;
                     start_top_log_probs, start_top_index, end_top_log_probs, end_top_index,
                     cls_logits for v2)
  tokenization_info  () -> vocab_file (the SentencePiece model asset), do_lower_case and the
                     window settings

How text becomes windows: the context is split on whitespace, each word is normalised and cut
into SentencePiece pieces as the original does (pieces never cross whitespace, so this equals
encoding the whole paragraph), and each piece gets the raw characters it covers. The original
aligns pieces to characters with an LCS; the two agree wherever normalisation keeps a word's
length (lower-casing, accents), which is all of SQuAD's English text; a word whose normalised form
has another length (ligatures such as "ﬁ") maps its pieces by clipped offsets instead. Windows,
max-context, the n-best spans and the best answer follow the original's rules; the answer is the
top of the original's n-best list.

The model runs on the batch's windows cut to the longest one (rounded up to a multiple of 8; see
saved_model). v2 masks padding itself (p_mask), so its outputs are unchanged; v1's n-best ranks
the padding positions last instead of by their logits (the original ranks them, then drops them
as outside the window): an answer differs only where padding outranked the real candidates.
"""

import math

import tensorflow as tf
import tensorflow_text as tf_text

from albert_tf.export.saved_model import (TextServingModule, as_float32, ids_spec, pad_positions,
                                          signature_function)
from albert_tf.tasks.squad.heads import P_MASK_ADDER
from albert_tf.export.serving_inputs import check_texts
from albert_tf.export.tokenizer_arguments import old_tokenizer_arguments
from albert_tf.export.windows import max_context_window
from albert_tf.tokenization.in_graph import PY_WHITESPACE
from albert_tf.tasks.squad.postprocess import NO_SPAN_LOG_PROB, NULL_ODDS_WITHOUT_WINDOWS
from albert_tf.tokenization.in_graph_cmrc import CmrcInGraphTokenizer

# The score of an answer without a span: that of postprocess's n-best entry for it.
NO_ANSWER_SCORE = 2 * NO_SPAN_LOG_PROB


def _char_offsets(context, byte_offsets):
  """Code-point index of each byte offset (ragged [B, (w)]) in its context string."""
  _, char_bytes = tf.strings.unicode_decode_with_offsets(context, "UTF-8")
  dense_chars = char_bytes.to_tensor(default_value=tf.int64.max)
  dense_offsets = byte_offsets.to_tensor()
  idx = tf.searchsorted(dense_chars, dense_offsets, side="left")
  return tf.RaggedTensor.from_tensor(idx, lengths=byte_offsets.row_lengths())


def wordpiece_paragraph(tokenizer, context):
  """SquadServingModule._paragraph for WordPiece, as wordpiece_data.paragraph_pieces: the
  baseline's words of each context [B], each cut into pieces by `tokenizer` (a
  CmrcInGraphTokenizer); a piece covers its own characters where the word's pieces spell the
  word exactly (no [UNK], lower-casing kept its length), else the whole word.

  Returns ids int32 [B, (L)], first and last character int64 [B, (L)].
  """
  words, byte_starts, byte_ends = tokenizer.raw_words(context)
  word_first = tf.cast(_char_offsets(context, byte_starts).flat_values, tf.int64)
  word_last = tf.cast(_char_offsets(context, byte_ends).flat_values, tf.int64) - 1
  lowered = tokenizer.lower(words.flat_values)  # [W]
  pieces = tokenizer.word_pieces(lowered)  # [W, (p)]
  continued = (tf.strings.regex_full_match(pieces, "##.*")
               & (tf.ragged.range(pieces.row_lengths()) > 0))
  lengths = (tf.cast(tf.strings.length(pieces, unit="UTF8_CHAR"), tf.int64)
             - 2 * tf.cast(continued, tf.int64))
  raw_length = word_last - word_first + 1
  exact = ((tf.reduce_sum(lengths, axis=1) == raw_length)
           & (tf.cast(tf.strings.length(lowered, unit="UTF8_CHAR"), tf.int64) == raw_length)
           & ~tf.reduce_any(tf.equal(pieces, "[UNK]"), axis=1))
  word = pieces.value_rowids()  # per piece
  own_first = tf.gather(word_first, word) + (tf.math.cumsum(lengths, axis=1)
                                             - lengths).flat_values
  own_last = own_first + lengths.flat_values - 1
  exact = tf.gather(exact, word)
  first = tf.where(exact, own_first, tf.gather(word_first, word))
  last = tf.where(exact, own_last, tf.gather(word_last, word))
  nest = lambda t: tf.RaggedTensor.from_row_splits(
      pieces.with_flat_values(t), words.row_splits).merge_dims(1, 2)
  ids = tf.cast(tokenizer.table.lookup(pieces.flat_values), tf.int32)
  return nest(ids), nest(first), nest(last)


class SquadServingModule(TextServingModule):
  """Wraps an AlbertSpanLabeler (v1) or AlbertSquadV2 for export.

  `tokenizer` is a settings.TokenizerSettings (0.3's spm_model_file, do_lower_case and
  vocab_file arguments work until 0.4.0: export.tokenizer_arguments)."""

  @old_tokenizer_arguments(
      lambda self, model, spm_model_file, do_lower_case=True, max_seq_length=384,
      doc_stride=128, max_query_length=64, max_answer_length=30, n_best_size=20,
      v2=False, null_score_diff_threshold=0.0, vocab_file=None: None)
  def __init__(self, model, tokenizer, max_seq_length=384, doc_stride=128, max_query_length=64,
               max_answer_length=30, n_best_size=20, v2=False, null_score_diff_threshold=0.0):
    super().__init__(model, tokenizer, max_seq_length, name="albert_squad_serving")
    # WordPiece: the CMRC 2018 baseline's words, as the binary's features.
    if not tokenizer.spm_model_file:
      self.tokenizer = CmrcInGraphTokenizer(tokenizer.vocab_file, tokenizer.do_lower_case)
    self.model = model
    self.doc_stride = doc_stride
    self.max_query_length = max_query_length
    self.max_answer_length = max_answer_length
    self.n_best_size = min(n_best_size, max_seq_length)
    self.v2 = v2
    self.null_score_diff_threshold = float(null_score_diff_threshold)

  # -- text to windows --------------------------------------------------------------------------
  def _paragraph(self, context):
    """Pieces of each context with the raw characters each covers.

    Returns ids int32 [B, (L)], first and last character int64 [B, (L)].
    """
    if isinstance(self.tokenizer, CmrcInGraphTokenizer):
      return wordpiece_paragraph(self.tokenizer, context)
    words, byte_starts, _ = tf_text.regex_split_with_offsets(context, PY_WHITESPACE, "")
    word_starts = _char_offsets(context, byte_starts)
    word_chars = tf.strings.length(words, unit="UTF8_CHAR")
    pieces = self.tokenizer.pieces(words.flat_values)                      # [W, (p)]
    lengths = tf.cast(tf.strings.length(pieces, unit="UTF8_CHAR"), tf.int64)
    # Within a word, "▁" stands for the space before it: position -1.
    ends = (tf.math.cumsum(lengths, axis=1) - 2).flat_values
    starts = ends - lengths.flat_values + 1
    word = lengths.value_rowids()                                          # per piece
    normalised = tf.reduce_sum(lengths, axis=1) - 1
    raw = tf.cast(word_chars.flat_values, tf.int64)
    same = tf.gather(tf.equal(normalised, raw), word)
    limit = tf.gather(raw - 1, word)
    clip = lambda pos: tf.where(same, pos, tf.minimum(pos, limit))
    base = tf.cast(tf.gather(word_starts.flat_values, word), tf.int64)
    first = lengths.with_flat_values(base + clip(starts))
    last = lengths.with_flat_values(base + clip(ends))
    nest = lambda t: tf.RaggedTensor.from_row_splits(t, words.row_splits).merge_dims(1, 2)
    n_chars = tf.strings.length(context, unit="UTF8_CHAR")
    top = tf.cast(tf.maximum(n_chars - 1, 0), tf.int64)
    clamp = lambda r: r.with_flat_values(tf.clip_by_value(
        r.flat_values, 0, tf.gather(top, r.value_rowids())))
    ids = tf.cast(self.tokenizer.sp.string_to_id(pieces), tf.int32)
    return nest(ids), clamp(nest(first)), clamp(nest(last))

  def _windows(self, question, context):
    """The original's doc_stride windows of every example, flattened to [N, T] features, with
    the bookkeeping the answer selection needs."""
    t = self.max_seq_length
    query = self.tokenizer.ids(question)[:, :self.max_query_length]
    para, first_char, last_char = self._paragraph(context)
    q_len = query.row_lengths()
    p_len = para.row_lengths()
    max_doc = t - q_len - 3
    step = tf.minimum(tf.cast(self.doc_stride, tf.int64), max_doc)
    extra = tf.maximum(p_len - max_doc, 0)
    # A paragraph without pieces (empty, whitespace only, or cut to nothing at a NUL, where the
    # text ops stop) gets no window, as the original cuts none from it: it is answered as one
    # without a span.
    n_windows = tf.where(p_len > 0, 1 + (extra + step - 1) // step, 0)
    example = tf.repeat(tf.range(tf.size(n_windows, out_type=tf.int64)), n_windows)
    k = tf.ragged.range(n_windows).flat_values
    win_start = k * tf.gather(step, example)
    win_len = tf.minimum(tf.gather(p_len, example) - win_start, tf.gather(max_doc, example))
    abs_start = tf.gather(para.row_starts(), example) + win_start
    doc = tf.gather(para.flat_values, tf.ragged.range(abs_start, abs_start + win_len))
    q = tf.gather(query, example)
    n = tf.size(example)
    cls = tf.fill([n, 1], self.tokenizer.cls_id)
    sep = tf.fill([n, 1], self.tokenizer.sep_id)
    ids = tf.concat([cls, q, sep, doc, sep], axis=1)
    ones = lambda r: tf.ones_like(r, tf.int32)
    zeros = lambda r: tf.zeros_like(r, tf.int32)
    segment = tf.concat([zeros(cls), zeros(q), zeros(sep), ones(doc), ones(sep)], axis=1)
    p_mask = tf.concat([zeros(cls), ones(q), ones(sep), zeros(doc), ones(sep)], axis=1)
    shape = [n, t]
    features = {
        "input_ids": ids.to_tensor(0, shape=shape),
        "input_mask": ones(ids).to_tensor(0, shape=shape),
        "segment_ids": segment.to_tensor(0, shape=shape),
        "p_mask": p_mask.to_tensor(1, shape=shape),
    }
    windows = {"example": example, "k": k, "start": win_start, "len": win_len,
               "offset": tf.gather(q_len, example) + 2, "n_windows": n_windows}
    return features, windows, first_char, last_char

  # -- answer selection -------------------------------------------------------------------------
  def _candidates(self, outputs):
    """(start position, end position, score) [N, C] of each window's candidate spans, in the
    original's order."""
    if self.v2:
      k_end = tf.shape(outputs["end_top_index"])[1] // tf.shape(outputs["start_top_index"])[1]
      starts = tf.repeat(outputs["start_top_index"], k_end, axis=1)
      start_lp = tf.repeat(outputs["start_top_log_probs"], k_end, axis=1)
      return (tf.cast(starts, tf.int64), tf.cast(outputs["end_top_index"], tf.int64),
              tf.cast(start_lp, tf.float64) + tf.cast(outputs["end_top_log_probs"], tf.float64))
    s_val, s_idx = tf.math.top_k(outputs["start_log_prob"], k=self.n_best_size)
    e_val, e_idx = tf.math.top_k(outputs["end_log_prob"], k=self.n_best_size)
    k = self.n_best_size
    starts = tf.repeat(s_idx, k, axis=1)
    ends = tf.tile(e_idx, [1, k])
    score = (tf.cast(tf.repeat(s_val, k, axis=1), tf.float64)
             + tf.cast(tf.tile(e_val, [1, k]), tf.float64))
    return tf.cast(starts, tf.int64), tf.cast(ends, tf.int64), score

  def _select(self, outputs, windows, first_char, last_char, context):
    starts, ends, score = self._candidates(outputs)
    offset = windows["offset"][:, tf.newaxis]
    length = windows["len"][:, tf.newaxis]
    s_rel, e_rel = starts - offset, ends - offset
    para_pos = windows["start"][:, tf.newaxis] + s_rel
    best_window = max_context_window(windows)
    example = windows["example"]
    lookup = tf.stack([tf.broadcast_to(example[:, tf.newaxis], tf.shape(para_pos)),
                       tf.clip_by_value(para_pos, 0, tf.cast(tf.shape(best_window)[1] - 1,
                                                             tf.int64))], axis=-1)
    max_context = tf.equal(tf.gather_nd(best_window, lookup), windows["k"][:, tf.newaxis])
    valid = ((s_rel >= 0) & (s_rel < length) & (e_rel < length) & max_context
             & (ends >= starts) & (ends - starts + 1 <= self.max_answer_length))
    score = tf.where(valid, score, -math.inf)
    # Every example's candidates in window order, then the best (first on ties).
    per_example = lambda v, d: tf.RaggedTensor.from_row_lengths(
        v, windows["n_windows"]).to_tensor(default_value=d)
    score_e = per_example(score, -math.inf)
    batch = tf.shape(score_e)[0]
    flat_score = tf.reshape(score_e, [batch, -1])
    best = tf.argmax(flat_score, axis=1)
    best_score = tf.gather(flat_score, best, batch_dims=1)
    found = tf.math.is_finite(best_score)
    pick = lambda v: tf.gather(tf.reshape(per_example(v, 0), [batch, -1]), best, batch_dims=1)
    s_para = pick(windows["start"][:, tf.newaxis] + s_rel)
    e_para = pick(windows["start"][:, tf.newaxis] + e_rel)
    safe = lambda r, i: tf.gather(r.to_tensor(default_value=0),
                                  tf.clip_by_value(i, 0, tf.maximum(
                                      tf.cast(r.bounding_shape()[1] - 1, tf.int64), 0))[:, None],
                                  batch_dims=1)[:, 0]
    begin, last = safe(first_char, s_para), safe(last_char, e_para)
    text = tf.strings.strip(tf.strings.substr(context, begin, last - begin + 1,
                                              unit="UTF8_CHAR"))
    # No valid span: postprocess's NO_SPAN entry, "" (not the original's nonce text "empty").
    answer = tf.where(found, text, "")
    best_score = tf.where(found, best_score, NO_ANSWER_SCORE)
    return answer, best_score

  def _answer(self, question, context):
    features, windows, first_char, last_char = self._windows(question, context)
    # A batch without a window (empty, or every context without pieces) has nothing to run the
    # model on, and the answer selection reduces over windows.
    return tf.cond(tf.size(windows["example"]) > 0,
                   lambda: self._read(features, windows, first_char, last_char, context),
                   lambda: self._unanswered(tf.size(context)))

  def _unanswered(self, batch):
    """What _read answers for an example without a window, for `batch` of them: "", the
    no-answer score and (v2) the null odds of postprocess.null_scores."""
    result = {"answer": tf.fill([batch], ""),
              "score": tf.fill([batch], tf.constant(NO_ANSWER_SCORE, tf.float64))}
    if self.v2:
      result["null_odds"] = tf.fill([batch], tf.constant(float(NULL_ODDS_WITHOUT_WINDOWS),
                                                         tf.float32))
    return result

  def _read(self, features, windows, first_char, last_char, context):
    """The answers of a batch with at least one window."""
    outputs = self._raw_outputs(self.trimmed(features))
    if not self.v2:
      # Back to [N, T] for the n-best search. Positions past the batch's longest window are
      # padding, which the original's n-best ranks and then discards as outside the window;
      # here they rank last, so they never take an n-best place from a real position.
      outputs = {name: pad_positions(value, self.max_seq_length, P_MASK_ADDER)
                 for name, value in outputs.items()}
    answer, score = self._select(outputs, windows, first_char, last_char, context)
    result = {"answer": answer, "score": score}
    if self.v2:
      cls = tf.RaggedTensor.from_row_lengths(outputs["cls_logits"], windows["n_windows"])
      # Capped as the original's minimum, which starts from it: an example without a window
      # (its row's minimum is +inf) gets the cap.
      null_odds = tf.minimum(tf.reduce_min(cls, axis=1), float(NULL_ODDS_WITHOUT_WINDOWS))
      result["null_odds"] = null_odds
      result["answer"] = tf.where(null_odds < self.null_score_diff_threshold, answer, "")
    return result

  def _raw_outputs(self, features):
    out = self.model(features, training=False)
    if self.v2:
      return as_float32({k: out[k] for k in ("start_top_log_probs", "start_top_index",
                                             "end_top_log_probs", "end_top_index", "cls_logits")})
    return as_float32({"start_log_prob": out["start_logits"], "end_log_prob": out["end_logits"]})

  # -- signatures -------------------------------------------------------------------------------
  @signature_function(input_signature=[tf.TensorSpec([None], tf.string, name="question"),
                                       tf.TensorSpec([None], tf.string, name="context")])
  def serve(self, question, context):
    texts = check_texts(question=question, context=context)
    return self._answer(texts["question"], texts["context"])

  @signature_function(input_signature=[ids_spec("input_ids"), ids_spec("input_mask"),
                                       ids_spec("segment_ids"), ids_spec("p_mask")])
  def features(self, input_ids, input_mask, segment_ids, p_mask):
    features, _ = self.checked_tokens({"input_ids": input_ids, "input_mask": input_mask,
                                       "segment_ids": segment_ids, "p_mask": p_mask})
    return self._raw_outputs(features)

  def info(self):
    return dict(super().info(), doc_stride=tf.constant(self.doc_stride),
                max_query_length=tf.constant(self.max_query_length),
                null_score_diff_threshold=tf.constant(self.null_score_diff_threshold))

  def signatures(self):
    return {"serving_default": self.serve, "features": self.features,
            "tokenization_info": self.tokenization_info}
