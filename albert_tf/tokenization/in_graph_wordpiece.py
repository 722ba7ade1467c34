r"""An in-graph WordPiece tokenizer (TF and tensorflow-text ops) that gives the original's
FullTokenizer(vocab_file, do_lower_case) ids: BasicTokenizer, then greedy longest-match-first
WordPiece. For models that ship a WordPiece vocab.txt (Google's Chinese ALBERT releases).

The original's steps, and the ops that do them here:
  _clean_text: drop NUL, U+FFFD and categories Cc/Cf (the original's _is_control; Hugging Face's
    copy drops every C*) except \t \n \r; map \t \n \r and Zs to a space (regex_replace, RE2's
    \p{..} classes);
  _tokenize_chinese_chars: spaces around the original's CJK code-point ranges (regex_replace);
  with do_lower_case: str.lower(), NFD, drop Mn (StringLower, tf-text's NormalizeUTF8, regex);
  _run_split_on_punc: spaces around P* and the ASCII symbols (regex_replace); whitespace split
    (tf-text's RegexSplitWithOffsets on the characters Python's str.split() splits on);
  WordpieceTokenizer: words over 200 characters become [UNK] here, the rest go to tf-text's
    WordpieceTokenizeWithOffsets (the same greedy search, [UNK] for a word it cannot cover).
Lower-casing, accent stripping and the punctuation split run on whole strings rather than per
whitespace token as in the original: spaces are neither cased nor case-ignorable, so Greek final
sigma sees the same context, and NFD never reorders marks across a space.

Tf-text ops used: NormalizeUTF8 (only with do_lower_case), RegexSplitWithOffsets and
WordpieceTokenizeWithOffsets, all in tensorflow-text 2.12, so that TF Serving images of that age
load the exports. The vocabulary is read with the original's load_vocab (first field of a line, a
blank line is " ", a repeated token keeps its first id and takes none) and held as constants in
the graph, not as a table over the file: TF's line-numbered file tables would give other ids for
such vocabularies.

Where TF ops can only approximate the original's Python (3.11, Unicode 14.0):
  - character classes (Cc/Cf, Zs, P*, Mn) come from RE2's Unicode tables, lower-casing from TF's
    ICU and NFD from tensorflow-text's ICU, not from Python's unicodedata. Measured on every code
    point c (surrogates excluded) in "A{c}b {c}" against the Python BasicTokenizer (TF 2.21,
    tensorflow-text 2.21): with do_lower_case 125 of 1,112,064 differ, 40 capital letters new in
    Unicode 14 that TF's ICU does not lower-case (Vithkuqi U+10570-U+10595, U+2C2F, U+A7C0,
    U+A7D0, U+A7D6, U+A7D8) and 85 code points unassigned in 14.0 that RE2 knows as Mn, P* or Cf;
    cased, 30, all unassigned in 14.0. Other TF builds bundle other Unicode versions;
  - lower-casing is ICU's full mapping (as str.lower, with final sigma), but ICU applies the
    process's locale: under tr/az it lower-cases "I" to dotless "ı". ASCII is lower-cased first
    with the locale-free ASCII op so that this cannot happen; what else tr/az/lt change (dots
    above) is an Mn mark, stripped after NFD (the code-point figures are the same under tr_TR,
    az_AZ and lt_LT);
  - bytes that are not UTF-8 are dropped by ICU's transcoder where the original decodes with
    errors="ignore" (equal on 20,000 random malformed byte strings, but not proven equal).
"""

import tensorflow as tf
import tensorflow_text as tf_text

from albert_tf.core import errors
from albert_tf.tokenization.in_graph import PY_WHITESPACE, PackingTokenizer
from albert_tf.tokenization.text import CJK_RANGES
from albert_tf.tokenization.wordpiece import load_vocab

UNK = "[UNK]"
MAX_INPUT_CHARS_PER_WORD = 200  # the original WordpieceTokenizer's max_input_chars_per_word
# \t \n \r are Cc, so whitespace is mapped before control characters are dropped.
_WHITESPACE = "[\\t\\n\\r\\p{Zs}]"
_CONTROL = "[\\x{FFFD}\\p{Cc}\\p{Cf}]"  # NUL is Cc
_CJK = "[" + "".join(f"\\x{{{lo:X}}}-\\x{{{hi:X}}}" for lo, hi in CJK_RANGES) + "]"
# The original counts every ASCII non-alphanumeric as punctuation, beside the P* categories.
_PUNCTUATION = "[\\p{P}!-/:-@\\[-`{-~]"


class WordpieceInGraphTokenizer(PackingTokenizer):
  """Raw strings -> WordPiece ids as FullTokenizer(vocab_file, do_lower_case).

  Attributes: vocab_size (entries of the original's load_vocab), cls_id, sep_id,
  model_file (vocab_file, for exports to ship as the SavedModel's asset), do_lower_case."""

  def __init__(self, vocab_file, do_lower_case=True, name="wordpiece_in_graph_tokenizer"):
    super().__init__(name=name)
    vocab = load_vocab(vocab_file)
    missing = [t for t in ("[CLS]", "[SEP]", UNK) if t not in vocab]
    if missing:
      raise errors.DataFormatError(
          f"the WordPiece vocabulary {vocab_file} has no {', '.join(missing)}")
    self.do_lower_case = do_lower_case
    self.model_file = vocab_file
    self.vocab_size = len(vocab)
    self.cls_id, self.sep_id = vocab["[CLS]"], vocab["[SEP]"]
    self.table = tf.lookup.StaticHashTable(
        tf.lookup.KeyValueTensorInitializer(list(vocab), list(vocab.values()),
                                            key_dtype=tf.string, value_dtype=tf.int64),
        default_value=-1)
    # The op counts bytes, the original characters: 4 bytes a character lets every word of up
    # to 200 characters through, and words() has already made the longer ones [UNK].
    self.wordpiece = tf_text.WordpieceTokenizer(
        self.table, suffix_indicator="##", max_bytes_per_word=4 * MAX_INPUT_CHARS_PER_WORD,
        max_chars_per_token=None, token_out_type=tf.string, unknown_token=UNK,
        split_unknown_characters=False)

  def normalize(self, text):
    """The BasicTokenizer's text before its final whitespace split: [B] strings -> [B]. A scalar
    is a batch of one (exports get one when REST's columnar form sends a lone string)."""
    text = tf.reshape(tf.convert_to_tensor(text, tf.string), [-1])
    text = tf.strings.unicode_transcode(text, "UTF-8", "UTF-8", errors="ignore")
    text = tf.strings.regex_replace(text, _WHITESPACE, " ")
    text = tf.strings.regex_replace(text, _CONTROL, "")
    text = tf.strings.regex_replace(text, _CJK, " \\0 ")
    if self.do_lower_case:
      # ASCII first, locale-free: ICU lower-cases with the process's locale (see module doc).
      text = tf.strings.lower(tf.strings.lower(text), encoding="utf-8")
      text = tf_text.normalize_utf8(text, "NFD")
      text = tf.strings.regex_replace(text, "\\p{Mn}", "")
    return tf.strings.regex_replace(text, _PUNCTUATION, " \\0 ")

  def words(self, text):
    """[B] strings -> ragged [B, (w)] basic tokens, each over 200 characters replaced by [UNK]."""
    # Not StringSplitV2: in a graph traced for [B], Grappler drops normalize's reshape, and a
    # scalar fed there (see normalize) reaches the split, which only this op's kernel accepts.
    words, _, _ = tf_text.regex_split_with_offsets(self.normalize(text), PY_WHITESPACE, "")
    flat = words.flat_values
    # WordPiece keeps "[UNK]" whole (it is in the vocabulary); no real word is "[UNK]", as the
    # punctuation split isolates brackets.
    too_long = tf.strings.length(flat, unit="UTF8_CHAR") > MAX_INPUT_CHARS_PER_WORD
    return words.with_flat_values(tf.where(too_long, UNK, flat))

  def pieces(self, text):
    """[B] strings -> ragged [B, (n)] WordPiece pieces (strings)."""
    words = self.words(text)
    pieces = self.wordpiece.tokenize(words.flat_values)  # [W, (p)]
    return words.with_flat_values(pieces).merge_dims(1, 2)

  def ids(self, text):
    """[B] strings -> ragged int32 [B, (n)] ids."""
    return tf.cast(self.table.lookup(self.pieces(text)), tf.int32)
