"""The WordPiece path of the original tokenizer: basic tokenization, then greedy longest match."""

import unicodedata

from albert_tf.core import io
from albert_tf.tokenization.text import (convert_to_unicode, is_cjk, is_control, is_punctuation,
                                         is_whitespace)


def load_vocab(vocab_file):
  """token -> id, first whitespace-separated field of each line; a blank line is ' '."""
  vocab = {}
  with io.open_text(vocab_file, errors="ignore") as f:
    for line in f:
      token = line.strip().split()[0] if line.strip() else " "
      if token not in vocab:
        vocab[token] = len(vocab)
  return vocab


class BasicTokenizer:
  """Cleans text, isolates CJK characters, splits on whitespace and punctuation, optionally
  lower-cases and strips accents."""

  def __init__(self, do_lower_case=True):
    self.do_lower_case = do_lower_case

  def tokenize(self, text):
    text = convert_to_unicode(text)
    cleaned = []
    for char in text:
      cp = ord(char)
      if cp == 0 or cp == 0xFFFD or is_control(char):
        continue
      if is_whitespace(char):
        cleaned.append(" ")
      elif is_cjk(cp):
        cleaned.extend((" ", char, " "))
      else:
        cleaned.append(char)
    split_tokens = []
    for token in "".join(cleaned).split():
      if self.do_lower_case:
        token = token.lower()
        token = "".join(c for c in unicodedata.normalize("NFD", token)
                        if unicodedata.category(c) != "Mn")
      split_tokens.extend(_split_on_punctuation(token))
    return " ".join(split_tokens).split()


def _split_on_punctuation(text):
  pieces, current = [], []
  for char in text:
    if is_punctuation(char):
      if current:
        pieces.append("".join(current))
        current = []
      pieces.append(char)
    else:
      current.append(char)
  if current:
    pieces.append("".join(current))
  return pieces


class WordpieceTokenizer:
  """Greedy longest-match-first split of each word into vocabulary pieces (## continuation)."""

  def __init__(self, vocab, unk_token="[UNK]", max_input_chars_per_word=200):
    self.vocab = vocab
    self.unk_token = unk_token
    self.max_input_chars_per_word = max_input_chars_per_word

  def tokenize(self, text):
    output = []
    for token in convert_to_unicode(text).split():
      if len(token) > self.max_input_chars_per_word:
        output.append(self.unk_token)
        continue
      pieces, start = [], 0
      while start < len(token):
        end, match = len(token), None
        while start < end:
          piece = token[start:end] if start == 0 else "##" + token[start:end]
          if piece in self.vocab:
            match = piece
            break
          end -= 1
        if match is None:
          pieces = None
          break
        pieces.append(match)
        start = end
      output.extend(pieces if pieces is not None else [self.unk_token])
    return output
