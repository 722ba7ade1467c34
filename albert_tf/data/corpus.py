"""Reading a raw-text corpus (one sentence per line, blank lines between documents) into
tokenized documents, as the original reads it, with clear errors for bad input.

The original holds every token as a Python string in lists of lists: about 60 bytes per token.
Here a corpus is three flat arrays (token ids, word-start flags, sentence ends: about 5 bytes per
token), and a document is a small view over them, so a shard of hundreds of MB fits in memory.
"""

import codecs
import os
from array import array

from albert_tf.core import errors
from albert_tf.core import io as files
from albert_tf.data.instances import Sentence
from albert_tf.data.masking import is_start_piece_sp, is_start_piece_wordpiece
from albert_tf.tokenization.chinese_words import word_start_flags


class Document:
  """Sentences [first, end) of a TokenizedCorpus: a sequence of `Sentence`s (ids and word-start
  flags, copied out of the flat arrays on access)."""

  __slots__ = ("_corpus", "_first", "_end")

  def __init__(self, corpus, first, end):
    self._corpus = corpus
    self._first = first
    self._end = end

  def __len__(self):
    return self._end - self._first

  def __getitem__(self, j):
    if not 0 <= j < self._end - self._first:
      raise IndexError(j)
    return self._corpus.sentence(self._first + j)


class TokenizedCorpus:
  """Token ids, word-start flags and sentence boundaries of a whole corpus in flat arrays.

  Sentence s is tokens [sentence_ends[s-1], sentence_ends[s]); documents are runs of sentences
  ended by a blank line (documents may span files, as the original reads them).
  """

  def __init__(self):
    self.ids = array("i")
    self.starts = bytearray()
    self.sentence_ends = array("q")
    self._document_ends = array("q")  # sentence index after each non-empty document
    self._open_document_start = 0
    self.skipped_documents = 0

  def add_sentence(self, ids, starts):
    self.ids.extend(ids)
    self.starts.extend(starts)
    self.sentence_ends.append(len(self.ids))

  def end_document(self):
    """A blank line: ends the open document, counting it as skipped when it has no sentence."""
    if len(self.sentence_ends) > self._open_document_start:
      self._document_ends.append(len(self.sentence_ends))
      self._open_document_start = len(self.sentence_ends)
    else:
      self.skipped_documents += 1

  def finish(self):
    """The end of the corpus: ends the open document as a blank line would."""
    self.end_document()

  def sentence(self, s):
    begin = self.sentence_ends[s - 1] if s else 0
    end = self.sentence_ends[s]
    return Sentence(self.ids[begin:end], self.starts[begin:end])

  def documents(self):
    """The non-empty documents ended so far, in corpus order, as `Document` views."""
    ends = self._document_ends
    return [Document(self, ends[k - 1] if k else 0, end) for k, end in enumerate(ends)]

  @property
  def num_tokens(self):
    return len(self.ids)


def corpus_lines(f, path):
  """Yields (line number, text, bytes read so far) for each line of the open binary file `f`,
  as the original reads its corpus (tf.gfile's readline): lines end at "\n", every "\r" is
  dropped (TensorFlow's line reader skips it anywhere in a line, so "a\rb" reads "ab"), the
  text is UTF-8, a byte-order mark at the start of the file dropped (the original would read it
  as a U+FEFF character of the first sentence). Raises errors.DataFormatError (a ValueError)
  naming `path` and the line otherwise."""
  bytes_read = 0
  for line_number, raw in enumerate(f, start=1):
    bytes_read += len(raw)
    if line_number == 1 and raw.startswith(codecs.BOM_UTF8):
      raw = raw[len(codecs.BOM_UTF8):]
    raw = raw.replace(b"\r", b"")
    if raw.endswith(b"\n"):
      raw = raw[:-1]  # the line's end; a final line without one is read as the original does
    try:
      text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
      raise errors.DataFormatError(f"{path}:{line_number}: not valid UTF-8 ({e.reason} at byte "
                                   f"{e.start} of the line): the corpus must be UTF-8") from None
    yield line_number, text, bytes_read


class CorpusReader:
  """Turns lines into sentences of a TokenizedCorpus with the tokenizer, caching per-piece
  decisions. Files are read line by line: memory does not grow with a line's file.

  Args:
    tokenizer: a FullTokenizer.
    open_binary: opens a corpus file for reading bytes.
    segment: None, or a Chinese word segmenter (str -> words, e.g.
      chinese_words.JiebaSegmenter): the later characters of each multi-character word then
      start no word (whole-word masking joins them), their ids unchanged.
  """

  def __init__(self, tokenizer, open_binary=files.open_binary, segment=None):
    self.tokenizer = tokenizer
    self.open_binary = open_binary
    self.segment = segment
    self._is_start = is_start_piece_sp if tokenizer.sp_model else is_start_piece_wordpiece
    self._start_cache = {}
    self.lines = 0
    self.bytes_read = 0

  def _starts(self, pieces):
    cache = self._start_cache
    out = bytearray(len(pieces))
    for k, piece in enumerate(pieces):
      start = cache.get(piece)
      if start is None:
        start = cache[piece] = self._is_start(piece)
      out[k] = start
    return out

  def read_file(self, path, corpus, on_progress=None):
    """Appends the sentences and document ends of `path` to `corpus`. `on_progress(bytes_read)`
    is called every 10,000 lines."""
    tok = self.tokenizer
    start = self.bytes_read
    with self.open_binary(path) as f:
      for _, line, file_bytes in corpus_lines(f, path):
        self.bytes_read = start + file_bytes
        self.lines += 1
        if on_progress is not None and self.lines % 10000 == 0:
          on_progress(self.bytes_read)
        line = tok.preprocess(line) if tok.sp_model else line.strip()
        if not line:
          corpus.end_document()
          continue
        pieces = tok.tokenize_preprocessed(line)
        if pieces:
          starts = self._starts(pieces)
          if self.segment is not None:
            starts = word_start_flags(pieces, starts, self.segment)
          corpus.add_sentence(tok.convert_tokens_to_ids(pieces), starts)
    return corpus


def read_corpus_documents(path, flag):
  """The documents of corpus file `path` (one sentence a line, blank lines between documents),
  each a list of its stripped lines, for the corpus tools.

  Raises:
    FileNotFoundError, errors.DataFormatError: a missing file, one that is not UTF-8 text or
      holds no text; each message names `flag` (e.g. "--input") and the fix.
  """
  if not os.path.isfile(path):
    raise FileNotFoundError(f"{flag}: no such file: {path}: give a corpus (one sentence a line, "
                            "blank lines between documents)")
  documents, current = [], []
  try:
    with open(path, encoding="utf-8") as f:
      for line in f:
        line = line.strip()
        if line:
          current.append(line)
        elif current:
          documents.append(current)
          current = []
  except UnicodeDecodeError:
    raise errors.DataFormatError(f"{flag}: {path} is not UTF-8 text: re-encode it as UTF-8 "
                                 "(e.g. iconv)") from None
  if current:
    documents.append(current)
  if not documents:
    raise errors.DataFormatError(f"{flag}: no documents in {path}: give a corpus with text")
  return documents


def write_corpus_documents(documents, path):
  """Writes documents (lists of lines) as read_corpus_documents reads them, a line a sentence
  and a blank line between documents, atomically."""
  files.write_text_atomically(path, "\n\n".join("\n".join(d) for d in documents) + "\n")
