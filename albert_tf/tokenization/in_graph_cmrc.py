"""The CMRC 2018 baseline's tokenizer (albert_tf.tokenization.cmrc) in TF ops, for the raw-text
signatures of WordPiece span-QA exports: spaces around every CJK character, punctuation mark,
whitespace and control character, str.lower() (with do_lower_case; no accent stripping, no text
cleaning), a whitespace split, then WordPiece as in_graph_wordpiece.

Where RE2's tables differ from Python's unicodedata: "control" is RE2's \\p{C} (Cc, Cf, Co, Cs),
which has no Cn: an unassigned code point is a word of its own in Python, part of its word here.
Lower-casing is ICU's, ASCII first (see in_graph_wordpiece).
"""

import tensorflow as tf
import tensorflow_text as tf_text

from albert_tf.tokenization.in_graph import PY_WHITESPACE
from albert_tf.tokenization.in_graph_wordpiece import (_CJK, MAX_INPUT_CHARS_PER_WORD, UNK,
                                                       WordpieceInGraphTokenizer)

_CJK_AND_PUNCTUATION = _CJK[1:-1] + "\\p{P}!-/:-@\\[-`{-~"
# Every character the baseline makes a word of its own (or a boundary, for whitespace).
SEPARATE = "[" + _CJK_AND_PUNCTUATION + "\\t\\n\\r\\p{Zs}\\p{C}]"
# Those that str.split() does not then drop: SEPARATE less Python's whitespace (Zs, and the Cc
# characters \t \n \x0b \x0c \r \x1c-\x1f \x85).
KEPT = ("[" + _CJK_AND_PUNCTUATION + "\\p{Cf}\\p{Co}\\p{Cs}"
        "\\x00-\\x08\\x0e-\\x1b\\x7f-\\x84\\x{86}-\\x{9f}]")


class CmrcInGraphTokenizer(WordpieceInGraphTokenizer):
  """Raw strings -> WordPiece ids as albert_tf.tokenization.cmrc.CmrcTokenizer."""

  def lower(self, text):
    """str.lower() of [B] strings with do_lower_case (ASCII first, locale-free), else as is."""
    if not self.do_lower_case:
      return text
    return tf.strings.lower(tf.strings.lower(text), encoding="utf-8")

  def normalize(self, text):
    """The baseline's spaced-out, lower-cased text before its whitespace split: [B] -> [B]."""
    text = tf.reshape(tf.convert_to_tensor(text, tf.string), [-1])
    text = tf.strings.unicode_transcode(text, "UTF-8", "UTF-8", errors="ignore")
    return self.lower(tf.strings.regex_replace(text, SEPARATE, " \\0 "))

  def raw_words(self, text):
    """The baseline's words of each raw text with their byte offsets, before lower-casing.

    Returns words string [B, (w)], byte starts and ends int64 [B, (w)].
    """
    return tf_text.regex_split_with_offsets(text, "(?:" + PY_WHITESPACE + ")|" + KEPT, KEPT)

  def word_pieces(self, words):
    """WordPiece pieces of each (already lower-cased) word: [W] -> ragged [W, (p)]; a word over
    200 characters is [UNK], as the original's WordpieceTokenizer."""
    too_long = tf.strings.length(words, unit="UTF8_CHAR") > MAX_INPUT_CHARS_PER_WORD
    return self.wordpiece.tokenize(tf.where(too_long, UNK, words))
