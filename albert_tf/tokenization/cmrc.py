"""The CMRC 2018 BERT baseline's tokenizer (ymcui/cmrc2018, baseline/run_cmrc2018_drcd_baseline.py),
used for WordPiece span QA (run_squad_v1/v2 with --vocab_file).

It is not BERT's FullTokenizer: the text is not cleaned and accents are not stripped. Every CJK
character, punctuation mark (ASCII non-alphanumerics and Unicode P*), whitespace character and
control character (every C* category except \\t \\n \\r, wider than BERT's Cc/Cf) becomes a word
of its own; the text is then lower-cased with str.lower() (with do_lower_case), split on
whitespace, and each word is cut by WordPiece. A zero-width space (U+200B, Cf) thus stays a word,
which WordPiece makes [UNK] unless the vocabulary has it. Plain Python, no TensorFlow.
"""

import unicodedata

from albert_tf.tokenization.text import convert_to_unicode, is_cjk, is_punctuation, is_whitespace
from albert_tf.tokenization.wordpiece import WordpieceTokenizer, load_vocab


def is_control(char):
  """The baseline's control test: any C* category (Cc, Cf, Co, Cs, Cn) except \\t \\n \\r."""
  if char in "\t\n\r":
    return False
  return unicodedata.category(char).startswith("C")


def is_separate(char):
  """Whether the baseline makes `char` a word of its own (or, for whitespace, a boundary)."""
  return (is_cjk(ord(char)) or is_punctuation(char) or is_whitespace(char)
          or is_control(char))


def split_words(text, do_lower_case):
  """The baseline's words of `text` (its customize_tokenizer): separate characters spaced out,
  str.lower() with do_lower_case, then str.split()."""
  text = convert_to_unicode(text)
  spaced = "".join(f" {c} " if is_separate(c) else c for c in text)
  if do_lower_case:
    spaced = spaced.lower()
  return spaced.split()


class CmrcTokenizer:
  """The baseline's ChineseFullTokenizer: split_words, then WordPiece over `vocab_file`.

  Attributes: vocab (token -> id, as albert_tf.tokenization.wordpiece.load_vocab reads it),
  inv_vocab, do_lower_case.
  """

  def __init__(self, vocab_file, do_lower_case=True, vocab=None):
    self.vocab = vocab if vocab is not None else load_vocab(vocab_file)
    self.inv_vocab = {v: k for k, v in self.vocab.items()}
    self.do_lower_case = do_lower_case
    self.wordpiece = WordpieceTokenizer(self.vocab)

  def tokenize(self, text):
    """WordPiece pieces of `text` ([UNK] for a word the vocabulary cannot cover)."""
    return [piece for word in split_words(text, self.do_lower_case)
            for piece in self.wordpiece.tokenize(word)]

  def convert_tokens_to_ids(self, tokens):
    return [self.vocab[t] for t in tokens]

  def convert_ids_to_tokens(self, ids):
    return [self.inv_vocab[int(i)] for i in ids]
