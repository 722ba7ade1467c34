"""FullTokenizer: SentencePiece or WordPiece, with the original's behaviour under Python 3."""

import os

import sentencepiece as spm

from albert_tf.core import errors
from albert_tf.core import io
from albert_tf.tokenization.text import preprocess_text
from albert_tf.tokenization.wordpiece import BasicTokenizer, WordpieceTokenizer, load_vocab

SPIECE_UNDERLINE = "\u2581"


def encode_pieces(sp_model, text, sample=False):
  """SentencePiece pieces of `text`, with the original's re-split of pieces like "9,".

  The original re-encodes a piece ending in digit + "," as the digits, then ",". Its attempt to
  drop a spurious leading "▁" from that re-encoding compares str with bytes under Python 3 and
  never fires; we reproduce that behaviour, as the released models were used with it.
  """
  pieces = sp_model.SampleEncodeAsPieces(text, 64, 0.1) if sample else sp_model.EncodeAsPieces(text)
  out = []
  for piece in pieces:
    if len(piece) > 1 and piece[-1] == "," and piece[-2].isdigit():
      out.extend(sp_model.EncodeAsPieces(piece[:-1].replace(SPIECE_UNDERLINE, "")))
      out.append(",")
    else:
      out.append(piece)
  return out


def encode_ids(sp_model, text, sample=False):
  return [sp_model.PieceToId(p) for p in encode_pieces(sp_model, text, sample)]


def sentencepiece_from_proto(proto, spm_model_file):
  """A SentencePieceProcessor of a model's bytes `proto`, read from `spm_model_file`.

  Raises:
    errors.DataFormatError: the bytes are no SentencePiece model (SentencePiece's own message
      names neither the file nor the fix; TensorFlow's op fails later with a long trace).
  """
  processor = spm.SentencePieceProcessor()
  try:
    processor.LoadFromSerializedProto(proto)
  except RuntimeError:
    hint = (" (a .vocab file lists the pieces; the model is the .model file beside it)"
            if os.fspath(spm_model_file).endswith(".vocab") else "")
    raise errors.DataFormatError(
        f"{spm_model_file} is not a SentencePiece model{hint}: give --spm_model_file the .model "
        "file that SentencePiece's trainer wrote (or --vocab_file for a WordPiece vocab.txt)"
    ) from None
  return processor


def load_sentencepiece(spm_model_file):
  """A SentencePieceProcessor of the model file, read through albert_tf.core.io (SentencePiece opens
  only local files: gs:// and other schemes go through TensorFlow's file systems).

  Raises:
    errors.DataFormatError: the file is no SentencePiece model.
  """
  with io.open_binary(spm_model_file) as f:
    return sentencepiece_from_proto(f.read(), spm_model_file)


def check_wordpiece_vocab(vocab, vocab_file):
  """Raises errors.DataFormatError unless `vocab` (token -> id, read from `vocab_file`) is a
  WordPiece vocabulary: one holding [UNK], which WordPiece gives every word it cannot cover."""
  if "[UNK]" in vocab:
    return
  hint = (": it looks like a SentencePiece .vocab (pieces with scores); give the .model file "
          "beside it as --spm_model_file" if any(t.startswith(SPIECE_UNDERLINE) for t in vocab)
          else "")
  raise errors.DataFormatError(
      f"{vocab_file} is not a WordPiece vocab.txt: it has no [UNK] token{hint}. --vocab_file "
      "takes BERT's vocab.txt format, one token a line, [UNK] among them")


class FullTokenizer:
  """End-to-end tokenization as the original's FullTokenizer.

  With `spm_model_file`: preprocess_text (whitespace, NFKD, accents, lower-case when
  do_lower_case), then SentencePiece pieces; the vocab is the model's pieces by id.
  Without: the BERT basic tokenizer and WordPiece over `vocab_file`.
  """

  def __init__(self, vocab_file=None, do_lower_case=True, spm_model_file=None):
    self.do_lower_case = do_lower_case
    self.sp_model = None
    if spm_model_file:
      if not io.exists(spm_model_file):
        raise FileNotFoundError(f"SentencePiece model not found: {spm_model_file}")
      self.sp_model = load_sentencepiece(spm_model_file)
      self.vocab = {self.sp_model.IdToPiece(i): i for i in range(self.sp_model.GetPieceSize())}
    else:
      if not vocab_file or not io.exists(vocab_file):
        raise FileNotFoundError(f"vocab file not found: {vocab_file!r} (and no spm_model_file)")
      self.vocab = load_vocab(vocab_file)
      check_wordpiece_vocab(self.vocab, vocab_file)
      self.basic_tokenizer = BasicTokenizer(do_lower_case=do_lower_case)
      self.wordpiece_tokenizer = WordpieceTokenizer(vocab=self.vocab)
    self.inv_vocab = {v: k for k, v in self.vocab.items()}

  @classmethod
  def from_settings(cls, settings):
    """The tokenizer of `settings`, an albert_tf.core.settings.TokenizerSettings (or any object
    with its fields spm_model_file, vocab_file and do_lower_case)."""
    return cls(vocab_file=settings.vocab_file, do_lower_case=settings.do_lower_case,
               spm_model_file=settings.spm_model_file)

  def preprocess(self, text):
    """The text normalisation applied before SentencePiece (identity for WordPiece)."""
    if self.sp_model:
      return preprocess_text(text, lower=self.do_lower_case)
    return text

  def tokenize(self, text):
    return self.tokenize_preprocessed(self.preprocess(text))

  def tokenize_preprocessed(self, text):
    if self.sp_model:
      return encode_pieces(self.sp_model, text)
    return [sub for token in self.basic_tokenizer.tokenize(text)
            for sub in self.wordpiece_tokenizer.tokenize(token)]

  def convert_tokens_to_ids(self, tokens):
    if self.sp_model:
      return [self.sp_model.PieceToId(t) for t in tokens]
    return [self.vocab[t] for t in tokens]

  def convert_ids_to_tokens(self, ids):
    if self.sp_model:
      return [self.sp_model.IdToPiece(int(i)) for i in ids]
    return [self.inv_vocab[i] for i in ids]
