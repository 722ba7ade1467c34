"""An in-graph tokenizer (tensorflow-text) that gives FullTokenizer's SentencePiece ids, and
[CLS]/[SEP] packing as the original's classifier features. Used by SavedModel exports, so that
clients send raw text.

Where TF ops can only approximate the original's Python: whitespace is what Python's str.split()
splits on; "combining" characters are removed as the Unicode category Mn (Python removes canonical
combining class != 0; the two differ on a few rare characters); lower-casing is ICU's. The
digit-comma re-split uses \\p{Nd} where Python uses str.isdigit (which also accepts superscripts).
"""

import tensorflow as tf
import tensorflow_text as tf_text

from albert_tf import io

# The characters Python's str.split() treats as whitespace.
PY_WHITESPACE = ("[\\t\\n\\x0b\\x0c\\r\\x1c\\x1d\\x1e\\x1f \\x{85}\\x{a0}\\x{1680}"
                  "\\x{2000}-\\x{200a}\\x{2028}\\x{2029}\\x{202f}\\x{205f}\\x{3000}]+")
_UNDERLINE = "\u2581"


def preprocess_text_op(text, lower=True):
  """preprocess_text in TF ops: collapse whitespace, NFKD, drop marks, lower-case. [B] -> [B]."""
  text = tf.strings.regex_replace(text, PY_WHITESPACE, " ")
  text = tf.strings.regex_replace(text, "^ | $", "")
  text = tf_text.normalize_utf8(text, "NFKD")
  text = tf.strings.regex_replace(text, "\\p{Mn}", "")
  if lower:
    text = tf.strings.lower(text, encoding="utf-8")
  return text


class InGraphTokenizer(tf.Module):
  """Raw strings -> SentencePiece ids as FullTokenizer(spm_model_file, do_lower_case)."""

  def __init__(self, spm_model_file=None, do_lower_case=True, spm_model_proto=None,
               name="in_graph_tokenizer"):
    super().__init__(name=name)
    if spm_model_proto is None:
      with io.open_binary(spm_model_file) as f:
        spm_model_proto = f.read()
    self.do_lower_case = do_lower_case
    self.sp = tf_text.SentencepieceTokenizer(model=spm_model_proto, out_type=tf.string)
    ids = self.sp.string_to_id(tf.constant(["[CLS]", "[SEP]"]))
    self.cls_id = int(ids[0])
    self.sep_id = int(ids[1])

  def pieces(self, text):
    """[B] strings -> ragged [B, (n)] pieces, with the original's digit-comma re-split."""
    text = preprocess_text_op(tf.convert_to_tensor(text), lower=self.do_lower_case)
    pieces = self.sp.tokenize(text)
    flat = pieces.flat_values
    resplit = tf.strings.regex_full_match(flat, "(?s).*\\p{Nd},")
    # Drop the final comma (only re-split pieces are used) and every "▁".
    stripped = tf.strings.regex_replace(tf.strings.regex_replace(flat, ",$", ""), _UNDERLINE, "")
    reencoded = self.sp.tokenize(stripped)
    commas = tf.RaggedTensor.from_tensor(tf.fill([tf.size(flat), 1], ","))
    reencoded = tf.concat([reencoded, commas], axis=1)
    kept = tf.RaggedTensor.from_tensor(flat[:, tf.newaxis])
    keep_mask = tf.RaggedTensor.from_row_lengths(~resplit, kept.row_lengths())
    new_mask = tf.RaggedTensor.from_row_lengths(
        tf.repeat(resplit, reencoded.row_lengths()), reencoded.row_lengths())
    per_piece = tf.concat([tf.ragged.boolean_mask(kept, keep_mask),
                           tf.ragged.boolean_mask(reencoded, new_mask)], axis=1)
    nested = tf.RaggedTensor.from_nested_row_splits(
        per_piece.flat_values, [pieces.row_splits, per_piece.row_splits])
    return nested.merge_dims(1, 2)

  def ids(self, text):
    """[B] strings -> ragged int32 [B, (n)] ids."""
    return tf.cast(self.sp.string_to_id(self.pieces(text)), tf.int32)

  def pack(self, text, text_b=None, max_seq_length=128):
    """[CLS] a [SEP] (b [SEP]), truncated as the original (longer side first, from the end),
    padded to max_seq_length. Returns input_ids, input_mask, segment_ids: int32 [B, T]."""
    a = self.ids(text)
    if text_b is None:
      a = a[:, :max_seq_length - 2]
      segments = [a]
    else:
      b = self.ids(text_b)
      la, lb = truncated_pair_lengths(a.row_lengths(), b.row_lengths(), max_seq_length - 3)
      segments = [a[:, :tf.reduce_max(la)], b[:, :tf.reduce_max(lb)]]
      segments = [tf.RaggedTensor.from_tensor(s.to_tensor(), lengths=n)
                  for s, n in zip(segments, (la, lb))]
    batch = tf.shape(a.row_lengths())[0]
    cls = tf.fill([batch, 1], self.cls_id)
    sep = tf.fill([batch, 1], self.sep_id)
    parts, types = [cls], [tf.zeros([batch, 1], tf.int32)]
    for k, seg in enumerate(segments):
      parts += [seg, sep]
      types += [tf.ones_like(seg) * k, tf.fill([batch, 1], k)]
    ids = tf.concat(parts, axis=1)
    segment_ids = tf.concat(types, axis=1)
    shape = [batch, max_seq_length]
    return {
        "input_ids": ids.to_tensor(0, shape=shape),
        "input_mask": tf.ones_like(ids).to_tensor(0, shape=shape),
        "segment_ids": segment_ids.to_tensor(0, shape=shape),
    }


def truncated_pair_lengths(len_a, len_b, budget):
  """Lengths after the original's _truncate_seq_pair (pop from the longer; ties pop b)."""
  len_a = tf.cast(len_a, tf.int32)
  len_b = tf.cast(len_b, tf.int32)
  fits = len_a + len_b <= budget
  short = tf.minimum(len_a, len_b)
  long_cut = budget - short
  a_longer = len_a > len_b
  uneven_a = tf.where(a_longer, long_cut, len_a)
  uneven_b = tf.where(a_longer, len_b, long_cut)
  even_a = (budget + 1) // 2
  even_b = budget // 2
  uneven = long_cut >= short
  out_a = tf.where(fits, len_a, tf.where(uneven, uneven_a, even_a))
  out_b = tf.where(fits, len_b, tf.where(uneven, uneven_b, even_b))
  return out_a, out_b
