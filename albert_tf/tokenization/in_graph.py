"""An in-graph tokenizer (tensorflow-text) that gives FullTokenizer's SentencePiece ids, and
[CLS]/[SEP] packing as the original's classifier features (PackingTokenizer, shared with the
WordPiece tokenizer of in_graph_wordpiece.py). Used by SavedModel exports, so that clients send raw
text.

Where TF ops can only approximate the original's Python: whitespace is what Python's str.split()
splits on; lower-casing is ICU's. The digit-comma re-split uses \\p{Nd} where Python uses
str.isdigit (which also accepts superscripts). "Combining" characters are removed as the
original removes them: those of canonical combining class != 0 (Python's unicodedata.combining,
combining_class()), not the Unicode category Mn, which also holds marks of class 0 such as the
emoji variation selector U+FE0F (a word of only U+FE0F is 2 pieces, `\u2581` and U+FE0F, in the
original and here).
"""

import functools
import sys
import unicodedata

import tensorflow as tf
import tensorflow_text as tf_text

from albert_tf.core import io
from albert_tf.tokenization.full import sentencepiece_from_proto

# The characters Python's str.split() treats as whitespace.
PY_WHITESPACE = ("[\\t\\n\\x0b\\x0c\\r\\x1c\\x1d\\x1e\\x1f \\x{85}\\x{a0}\\x{1680}"
                  "\\x{2000}-\\x{200a}\\x{2028}\\x{2029}\\x{202f}\\x{205f}\\x{3000}]+")
_UNDERLINE = "\u2581"


@functools.lru_cache(maxsize=None)
def combining_class():
  """An RE2 character class of the code points Python's preprocess_text drops after NFKD (those
  with unicodedata.combining(c) != 0), as ranges: 188 of them under Unicode 14.0. Built on first
  use (a scan of every code point, 0.2 s)."""
  ranges = []
  for code in range(sys.maxunicode + 1):
    if unicodedata.combining(chr(code)):
      if ranges and ranges[-1][1] == code - 1:
        ranges[-1][1] = code
      else:
        ranges.append([code, code])
  return "[" + "".join(f"\\x{{{a:x}}}" + (f"-\\x{{{b:x}}}" if b > a else "")
                       for a, b in ranges) + "]"


def preprocess_text_op(text, lower=True):
  """preprocess_text in TF ops: collapse whitespace, NFKD, drop marks, lower-case. [B] -> [B]."""
  text = tf.strings.regex_replace(text, PY_WHITESPACE, " ")
  text = tf.strings.regex_replace(text, "^ | $", "")
  text = tf_text.normalize_utf8(text, "NFKD")
  text = tf.strings.regex_replace(text, combining_class(), "")
  if lower:
    text = tf.strings.lower(text, encoding="utf-8")
  return text


class PackingTokenizer(tf.Module):
  """What exports need of an in-graph tokenizer: subclasses give ids(text) (ragged int32
  [B, (n)]), cls_id and sep_id (ints), vocab_size (an int) and model_file (the file to ship as the
  SavedModel's asset); this class packs ids as the original's classifier features."""

  def ids(self, text):
    """[B] strings -> ragged int32 [B, (n)] ids."""
    raise NotImplementedError

  def pack(self, text, text_b=None, max_seq_length=128):
    """[CLS] a [SEP] (b [SEP]), truncated as the original (longer side first, from the end),
    padded to max_seq_length. text, text_b: [B] strings. Returns input_ids, input_mask,
    segment_ids: int32 [B, max_seq_length]."""
    a = self.ids(text)
    batch = a.nrows(out_type=tf.int32)
    if text_b is None:
      segments = [a[:, :max_seq_length - 2]]
      has_segment = [tf.ones([batch], tf.bool)]
    else:
      b = self.ids(text_b)
      len_a = tf.cast(a.row_lengths(), tf.int32)
      has_b = b.row_lengths() > 0
      la, lb = truncated_pair_lengths(len_a, b.row_lengths(), max_seq_length - 3)
      # The original packs a pair whose text_b has no tokens as a single text (no second [SEP]).
      la = tf.where(has_b, la, tf.minimum(len_a, max_seq_length - 2))
      segments = [a[:, :tf.reduce_max(la)], b[:, :tf.reduce_max(lb)]]
      segments = [tf.RaggedTensor.from_tensor(s.to_tensor(), lengths=n)
                  for s, n in zip(segments, (la, lb))]
      has_segment = [tf.ones([batch], tf.bool), has_b]
    parts, types = [tf.fill([batch, 1], self.cls_id)], [tf.zeros([batch, 1], tf.int32)]
    for k, (seg, has) in enumerate(zip(segments, has_segment)):
      sep = separators(has, self.sep_id)
      parts += [seg, sep]
      types += [tf.ones_like(seg) * k, tf.ones_like(sep) * k]
    ids = tf.concat(parts, axis=1)
    segment_ids = tf.concat(types, axis=1)
    shape = [batch, max_seq_length]
    return {
        "input_ids": ids.to_tensor(0, shape=shape),
        "input_mask": tf.ones_like(ids).to_tensor(0, shape=shape),
        "segment_ids": segment_ids.to_tensor(0, shape=shape),
    }


class InGraphTokenizer(PackingTokenizer):
  """Raw strings -> SentencePiece ids as FullTokenizer(spm_model_file, do_lower_case).

  `sp` is the tensorflow-text SentencepieceTokenizer; `model_file` is spm_model_file (None when
  built from spm_model_proto)."""

  def __init__(self, spm_model_file=None, do_lower_case=True, spm_model_proto=None,
               name="in_graph_tokenizer"):
    super().__init__(name=name)
    if spm_model_proto is None:
      with io.open_binary(spm_model_file) as f:
        spm_model_proto = f.read()
      # Checked in Python first: the op's own error is a long trace naming no file.
      sentencepiece_from_proto(spm_model_proto, spm_model_file)
    self.do_lower_case = do_lower_case
    self.model_file = spm_model_file
    self.sp = tf_text.SentencepieceTokenizer(model=spm_model_proto, out_type=tf.string)
    self.vocab_size = int(self.sp.vocab_size())
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


def separators(present, sep_id):
  """present: bool [B] -> ragged int32 [B, (0 or 1)]: [sep_id] where present, else []."""
  lengths = tf.cast(present, tf.int64)
  return tf.RaggedTensor.from_row_lengths(tf.fill([tf.reduce_sum(lengths)], sep_id), lengths)


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
