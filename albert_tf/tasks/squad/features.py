"""The windowed features of SQuAD examples, one converter for SentencePiece and WordPiece pieces.

Each tokenizer's converter (tasks.squad.data for SentencePiece, tasks.squad.wordpiece_data for
WordPiece) turns an example into an EncodedExample: question ids, paragraph piece ids, each piece's
raw characters and the answer's pieces. Windowing cuts it into doc_stride windows packed as
[CLS] question [SEP] window [SEP], so that both write the same InputFeatures.
"""

import collections.abc
import dataclasses
from typing import Optional

from albert_tf.finetuning.windows import doc_spans, is_max_context

FIRST_UNIQUE_ID = 1000000000


@dataclasses.dataclass
class InputFeatures:
  """One window of one example. tok_*_to_orig_index map the window's paragraph tokens to
  character offsets of the raw paragraph; token_is_max_context is keyed by position in `tokens`.
  """
  unique_id: int
  example_index: Optional[int]
  doc_span_index: int
  tok_start_to_orig_index: list
  tok_end_to_orig_index: list
  token_is_max_context: dict
  tokens: list
  input_ids: list
  input_mask: list
  segment_ids: list
  paragraph_len: int
  p_mask: list
  start_position: Optional[int] = None
  end_position: Optional[int] = None
  is_impossible: Optional[bool] = None
  # WordPiece features only: position in `tokens` -> index of the paragraph word it is cut from
  # (the CMRC 2018 baseline's token_to_orig_map).
  token_to_orig_map: Optional[dict] = None


def pack_window(query_ids, doc_ids, spans, span_index, max_seq_length, cls_id, sep_id):
  """[CLS] query [SEP] window [SEP] of one doc_stride window, zero-padded to max_seq_length.

  Args:
    query_ids, doc_ids: the question's and the whole paragraph's ids.
    spans: the (start, length) windows of doc_spans; span_index the one to pack.

  Returns (input_ids, input_mask, segment_ids, p_mask [max_seq_length] (p_mask 1 where no
  answer can be: the question, separators, padding), token_is_max_context {position: bool},
  the unpadded length).
  """
  span_start, span_length = spans[span_index]
  ids = [cls_id] + query_ids + [sep_id]
  segment_ids = [0] * len(ids)
  p_mask = [0] + [1] * (len(query_ids) + 1)
  max_context = {}
  for k in range(span_start, span_start + span_length):
    max_context[len(ids)] = is_max_context(spans, span_index, k)
    ids.append(doc_ids[k])
  ids.append(sep_id)
  segment_ids += [1] * (span_length + 1)
  p_mask += [0] * span_length + [1]
  length = len(ids)
  pad = max_seq_length - length
  input_mask = [1] * length + [0] * pad
  return (ids + [0] * pad, input_mask, segment_ids + [0] * pad, p_mask + [1] * pad, max_context,
          length)


def window_answer(tok_start, tok_end, span_start, query_length, inside):
  """(start_position, end_position, is_impossible) of a training window: the answer's pieces
  tok_start..tok_end moved into the packed window when `inside` (the window holds it), else
  0, 0, True."""
  if not inside:
    return 0, 0, True
  offset = query_length + 2  # [CLS] question [SEP]
  return tok_start - span_start + offset, tok_end - span_start + offset, False


@dataclasses.dataclass
class EncodedExample:
  """One example's question and paragraph as ids, before it is cut into windows.

  query_ids: the question's ids, already cut to max_query_length.
  doc_ids: the paragraph's piece ids; char_starts and char_ends hold, per piece, its first and
    last character in the raw paragraph.
  answer: (first, last) paragraph piece of a training answer; None outside training and for an
    unanswerable question.
  is_impossible: what the features of a prediction example record (a training window records
    whether it holds the answer).
  window_tokens: (input_ids, span_start, span_length) -> the `tokens` of one window's feature.
  piece_words: per piece, the paragraph word it is cut from (WordPiece only: token_to_orig_map).
  """
  query_ids: list
  doc_ids: list
  char_starts: list
  char_ends: list
  answer: Optional[tuple]
  is_impossible: Optional[bool]
  window_tokens: collections.abc.Callable
  piece_words: Optional[list] = None


@dataclasses.dataclass(frozen=True)
class Windowing:
  """How examples become doc_stride windows, the same for SentencePiece and WordPiece pieces.

  ordered_answers: a training answer must also start before it ends to be held by a window (the
    original's squad_utils checks it; the CMRC 2018 baseline does not).
  """
  max_seq_length: int
  doc_stride: int
  cls_id: int
  sep_id: int
  is_training: bool
  ordered_answers: bool

  def _holds(self, answer, span_start, span_end):
    """Whether the window span_start..span_end (pieces, inclusive) holds the answer."""
    if answer is None:
      return False
    tok_start, tok_end = answer
    if self.ordered_answers:
      return span_start <= tok_start <= tok_end <= span_end
    return tok_start >= span_start and tok_end <= span_end

  def write(self, encoded, example_index, unique_id, output_fn):
    """Calls output_fn(InputFeatures) for each window of one EncodedExample, unique ids counting
    up from unique_id; returns the next unused id."""
    query_length = len(encoded.query_ids)
    spans = doc_spans(len(encoded.doc_ids), self.max_seq_length - query_length - 3,
                      self.doc_stride)
    for span_index, (span_start, span_length) in enumerate(spans):
      ids, input_mask, segment_ids, p_mask, max_context, paragraph_len = pack_window(
          encoded.query_ids, encoded.doc_ids, spans, span_index, self.max_seq_length,
          self.cls_id, self.sep_id)
      window = slice(span_start, span_start + span_length)
      impossible = encoded.is_impossible
      start_position = end_position = None
      if self.is_training:
        tok_start, tok_end = encoded.answer or (None, None)
        start_position, end_position, impossible = window_answer(
            tok_start, tok_end, span_start, query_length,
            self._holds(encoded.answer, span_start, span_start + span_length - 1))
      to_orig = None
      if encoded.piece_words is not None:
        to_orig = {query_length + 2 + i: word
                   for i, word in enumerate(encoded.piece_words[window])}
      output_fn(InputFeatures(
          unique_id=unique_id, example_index=None if self.is_training else example_index,
          doc_span_index=span_index, tok_start_to_orig_index=encoded.char_starts[window],
          tok_end_to_orig_index=encoded.char_ends[window], token_is_max_context=max_context,
          tokens=encoded.window_tokens(ids, span_start, span_length), input_ids=ids,
          input_mask=input_mask, segment_ids=segment_ids, paragraph_len=paragraph_len,
          p_mask=p_mask, start_position=start_position, end_position=end_position,
          is_impossible=impossible, token_to_orig_map=to_orig))
      unique_id += 1
    return unique_id
