"""Reading a raw-text corpus (one sentence per line, blank lines between documents) into
tokenized documents, as the original reads it, with clear errors for bad input."""

from albert_tf import io as files
from albert_tf.data.instances import Sentence
from albert_tf.data.masking import is_start_piece_sp, is_start_piece_wordpiece


class CorpusReader:
  """Turns lines into Sentences with the tokenizer, caching per-piece decisions."""

  def __init__(self, tokenizer):
    self.tokenizer = tokenizer
    self._is_start = is_start_piece_sp if tokenizer.sp_model else is_start_piece_wordpiece
    self._start_cache = {}
    self.skipped_documents = 0
    self.lines = 0

  def _starts(self, pieces):
    cache = self._start_cache
    out = []
    for piece in pieces:
      start = cache.get(piece)
      if start is None:
        start = cache[piece] = self._is_start(piece)
      out.append(start)
    return out

  def read_documents(self, input_files, all_documents=None):
    """Appends the documents of `input_files` (documents may span files, as the original)."""
    documents = all_documents if all_documents is not None else [[]]
    tok = self.tokenizer
    for path in input_files:
      with files.open_binary(path) as f:  # gs:// inputs too, as expand_input_patterns lists
        lines = f.read().split(b"\n")
      if lines and not lines[-1]:
        lines.pop()  # the end of the file, not an empty line
      for line_number, raw in enumerate(lines, start=1):
        try:
          line = raw.decode("utf-8")
        except UnicodeDecodeError as e:
          raise ValueError(f"{path}:{line_number}: not valid UTF-8 ({e.reason} at byte "
                           f"{e.start})") from None
        self.lines += 1
        line = tok.preprocess(line) if tok.sp_model else line.strip()
        if not line:
          documents.append([])
          continue
        pieces = tok.tokenize_preprocessed(line)
        if pieces:
          documents[-1].append(Sentence(tok.convert_tokens_to_ids(pieces), self._starts(pieces)))
    return documents

  def finish(self, documents):
    """Drops empty documents (counted) and checks that something is left."""
    kept = [d for d in documents if d]
    self.skipped_documents = len(documents) - len(kept)
    return kept
