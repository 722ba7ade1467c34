"""SQuAD examples and features as the original's squad_utils makes them.

SentencePiece pieces of the normalised paragraph are aligned back to characters of the raw
paragraph with the original's banded longest-common-subsequence match, so that answers can be cut
from the raw text; long paragraphs become overlapping windows (doc_stride), and each token records
whether the window is its "max context" one (tasks.squad.features).
"""

import collections
import dataclasses
import json
import logging
from typing import Optional

import numpy as np

from albert_tf.core import errors
from albert_tf.core import io
from albert_tf.data.tfrecords import AtomicTFRecordWriter, encode_example, int64_feature
from albert_tf.tasks.squad.features import FIRST_UNIQUE_ID, EncodedExample, Windowing
from albert_tf.tokenization.full import encode_ids, encode_pieces
from albert_tf.tokenization.text import preprocess_text

logger = logging.getLogger("albert_tf")

SPIECE_UNDERLINE = "\u2581"


@dataclasses.dataclass
class SquadExample:
  """One question on a paragraph; start_position is a character offset into paragraph_text
  (training only; -1 for unanswerable questions)."""
  qas_id: str
  question_text: str
  paragraph_text: str
  orig_answer_text: Optional[str] = None
  start_position: Optional[int] = None
  end_position: Optional[int] = None
  is_impossible: bool = False


def load_squad_json(input_file):
  """The "data" list of a SQuAD json file (clear errors for a missing, malformed or non-SQuAD
  file, naming it)."""
  try:
    root = io.load_json(input_file, "SQuAD file")
  except json.JSONDecodeError as e:
    raise errors.DataFormatError(
        f"SQuAD file {input_file} is not valid JSON: {e.msg} at line {e.lineno}, "
        f"column {e.colno}") from None
  if not isinstance(root, dict) or not isinstance(root.get("data"), list):
    raise errors.DataFormatError(
        f"SQuAD file {input_file} has no \"data\" list: expected "
        "{\"data\": [{\"paragraphs\": [{\"context\": ..., \"qas\": [...]}]}]}")
  return root["data"]


def _field(entry, key, kind, where):
  """entry[key], which must be a `kind`; else an error naming `where` the entry is."""
  value = entry.get(key) if isinstance(entry, dict) else None
  if not isinstance(value, kind) or isinstance(value, bool):
    found = "missing" if not isinstance(entry, dict) or key not in entry else repr(value)[:50]
    names = " or ".join(k.__name__ for k in (kind if isinstance(kind, tuple) else (kind,)))
    raise errors.DataFormatError(
        f"{where}: \"{key}\" must be a {names}, found {found}: fix or remove the "
        "entry")
  return value


def _questions(data, input_file):
  """(where, context, qa) of every question of a SQuAD "data" list; `where` names it in errors
  (file, position and, once known, its id). A question id used twice is an error naming both
  positions: predictions, null odds and scores are keyed by id, so one would overwrite the other.
  """
  source = f"SQuAD file {input_file}"
  seen = {}
  for a, article in enumerate(data):
    for p, paragraph in enumerate(_field(article, "paragraphs", list,
                                         f"{source}, article {a}")):
      context = _field(paragraph, "context", str, f"{source}, article {a}, paragraph {p}")
      qas = _field(paragraph, "qas", list, f"{source}, article {a}, paragraph {p}")
      for q, qa in enumerate(qas):
        position = f"article {a}, paragraph {p}, question {q}"
        qas_id = _field(qa, "id", (str, int), f"{source}, {position}")
        if str(qas_id) in seen:
          raise errors.DataFormatError(
              f"{source}: question id {qas_id!r} is used twice, by "
              f"{seen[str(qas_id)]} and by {position}: predictions are keyed by "
              "id, so one answer would overwrite the other; give each question "
              "its own id")
        seen[str(qas_id)] = position
        yield f"{source}, question {qas_id} ({position})", context, qa


def _answer_in_context(context, start, text):
  """Whether the answer's words are among the context words its offsets cover (whitespace
  normalised; an answer may start or end inside a word): the "Could not find answer" test of
  BERT's run_squad, on characters."""
  end = start + len(text)
  while start > 0 and not context[start - 1].isspace():
    start -= 1
  while end < len(context) and not context[end].isspace():
    end += 1
  return " ".join(text.split()) in " ".join(context[start:end].split())


def _training_answer(qa, context, where):
  """(answer text, character offset) of a training question that has an answer."""
  answers = _field(qa, "answers", list, where)
  if len(answers) != 1:
    raise errors.DataFormatError(
        f"{where}: for training, each question should have exactly 1 answer "
        f"(it has {len(answers)}); mark an unanswerable one \"is_impossible\": true "
        "(SQuAD 2.0)")
  text = _field(answers[0], "text", str, f"{where}, answer")
  start = _field(answers[0], "answer_start", int, f"{where}, answer")
  if not text.strip():
    raise errors.DataFormatError(
        f"{where}: the answer text is empty; mark an unanswerable question "
        "\"is_impossible\": true (SQuAD 2.0)")
  if start < 0 or start + len(text) > len(context):
    raise errors.DataFormatError(
        f"{where}: answer_start {start} with an answer of {len(text)} characters "
        f"lies outside its context ({len(context)} characters): fix the offset")
  return text, start


def read_squad_examples(input_file, is_training):
  """SquadExamples of a SQuAD v1.1/v2.0 json file, in file order.

  Malformed entries are errors naming the file and the question. A training answer whose text is
  not at its offset is skipped, as BERT's run_squad skips it ("Could not find answer"; each one
  and their count are logged). No question at all is an error: training on or predicting nothing
  would pass silently, or fail only once training is over.
  """
  examples, skipped = [], 0
  for where, context, qa in _questions(load_squad_json(input_file), input_file):
    question = _field(qa, "question", str, where)
    start, answer, impossible = None, None, False
    if is_training:
      impossible = bool(qa.get("is_impossible", False))
      if impossible:
        start, answer = -1, ""
      else:
        answer, start = _training_answer(qa, context, where)
        if not _answer_in_context(context, start, answer):
          skipped += 1
          logger.info(f"Could not find answer: {where}: "
                      f"{context[start:start + len(answer)]!r} vs. {answer!r}")
          continue
    elif "answers" in qa:  # a dev set's answers score the predictions, after training
      for answer in _field(qa, "answers", list, where):
        _field(answer, "text", str, f"{where}, answer")
    examples.append(SquadExample(qa["id"], question, context, answer, start,
                                 is_impossible=impossible))
  if skipped:
    logger.info(f"skipped {skipped} of {len(examples) + skipped} training questions of "
                f"{input_file}: their answer text is not at answer_start in the context")
  if not examples:
    raise errors.DataFormatError(f"SQuAD file {input_file} has no usable questions"
                     + (f" (all {skipped} answers were not found in their contexts)"
                        if skipped else "") + ": check that it is the right file")
  return examples


def _lcs_alignment(paragraph_text, tok_cat_text, do_lower_case, max_dist):
  """The original's banded LCS between raw characters and the pieces' text.

  Returns (score at the last cell, back-pointers {(i, j): 0 up, 1 left, 2 match}).
  """
  n, m = len(paragraph_text), len(tok_cat_text)
  f = np.zeros((n, m), dtype=np.float32)
  g = {}
  # A raw character matches when it normalises to exactly the piece character.
  normalised = [preprocess_text(c, lower=do_lower_case, remove_space=False)
                for c in paragraph_text]
  for i in range(n):
    for j in range(max(i - max_dist, 0), min(i + max_dist, m)):
      if i > 0:
        g[(i, j)] = 0
        f[i, j] = f[i - 1, j]
      if j > 0 and f[i, j - 1] > f[i, j]:
        g[(i, j)] = 1
        f[i, j] = f[i, j - 1]
      f_prev = f[i - 1, j - 1] if i > 0 and j > 0 else 0
      if normalised[i] == tok_cat_text[j] and f_prev + 1 > f[i, j]:
        g[(i, j)] = 2
        f[i, j] = f_prev + 1
  return (f[n - 1, m - 1] if n and m else 0.0), g


def _convert_index(index, pos, m=None, is_start=True):
  """index[pos], or for an unaligned position a neighbour's value as the original picks it."""
  if index[pos] is not None:
    return index[pos]
  n = len(index)
  rear = pos
  while rear < n - 1 and index[rear] is None:
    rear += 1
  front = pos
  while front > 0 and index[front] is None:
    front -= 1
  if index[front] is None and index[rear] is None:
    raise ValueError("no aligned position to convert from")
  if index[front] is None:
    if index[rear] >= 1:
      return 0 if is_start else index[rear] - 1
    return index[rear]
  if index[rear] is None:
    if m is not None and index[front] < m - 1:
      return index[front] + 1 if is_start else m - 1
    return index[front]
  if is_start:
    return index[front] + 1 if index[rear] > index[front] + 1 else index[rear]
  return index[rear] - 1 if index[rear] > index[front] + 1 else index[front]


def align_pieces(paragraph_text, para_tokens, do_lower_case):
  """Character offsets (start, end) in paragraph_text of each piece, and the char-level maps
  needed for answers; None when the alignment fails (the original skips such examples)."""
  chartok_to_tok_index, tok_start_to_chartok, tok_end_to_chartok = [], [], []
  count = 0
  for i, token in enumerate(para_tokens):
    text = token.replace(SPIECE_UNDERLINE, " ")
    chartok_to_tok_index.extend([i] * len(text))
    tok_start_to_chartok.append(count)
    count += len(text)
    tok_end_to_chartok.append(count - 1)
  tok_cat_text = "".join(para_tokens).replace(SPIECE_UNDERLINE, " ")
  n, m = len(paragraph_text), len(tok_cat_text)

  max_dist = abs(n - m) + 5
  for _ in range(2):
    score, g = _lcs_alignment(paragraph_text, tok_cat_text, do_lower_case, max_dist)
    if score > 0.8 * n:
      break
    max_dist *= 2

  orig_to_chartok = [None] * n
  chartok_to_orig = [None] * m
  i, j = n - 1, m - 1
  while i >= 0 and j >= 0 and (i, j) in g:
    if g[(i, j)] == 2:
      orig_to_chartok[i] = j
      chartok_to_orig[j] = i
      i, j = i - 1, j - 1
    elif g[(i, j)] == 1:
      j -= 1
    else:
      i -= 1
  if all(v is None for v in orig_to_chartok) or score < 0.8 * n:
    return None
  starts = [_convert_index(chartok_to_orig, s, n, is_start=True) for s in tok_start_to_chartok]
  ends = [_convert_index(chartok_to_orig, e, n, is_start=False) for e in tok_end_to_chartok]
  return starts, ends, orig_to_chartok, chartok_to_tok_index


def convert_examples_to_features(examples, tokenizer, max_seq_length, doc_stride,
                                 max_query_length, is_training, output_fn, do_lower_case):
  """Calls output_fn(InputFeatures) for every window of every example, unique ids counting up
  from 1000000000. Examples whose pieces cannot be aligned to the paragraph are skipped (as the
  original's "MISMATCH DETECTED"). Returns the number of features."""
  sp = tokenizer.sp_model
  if sp is None:
    raise errors.UsageError("SQuAD features need a SentencePiece model (--spm_model_file)")
  windowing = Windowing(max_seq_length, doc_stride, sp.PieceToId("[CLS]"), sp.PieceToId("[SEP]"),
                        is_training, ordered_answers=True)
  unique_id = FIRST_UNIQUE_ID
  for example_index, example in enumerate(examples):
    if example_index % 1000 == 0:
      logger.info(f"Converting {example_index}/{len(examples)}")
    query = encode_ids(sp, preprocess_text(example.question_text, lower=do_lower_case))
    query = query[:max_query_length]
    para_tokens = encode_pieces(sp, preprocess_text(example.paragraph_text,
                                                    lower=do_lower_case))
    aligned = align_pieces(example.paragraph_text, para_tokens, do_lower_case)
    if aligned is None:
      logger.info(f"MISMATCH DETECTED: skipping example {example.qas_id}")
      continue
    tok_start_to_orig, tok_end_to_orig, orig_to_chartok, chartok_to_tok = aligned

    answer = None
    if is_training and not example.is_impossible:
      end_char = example.start_position + len(example.orig_answer_text) - 1
      answer = (chartok_to_tok[_convert_index(orig_to_chartok, example.start_position,
                                              is_start=True)],
                chartok_to_tok[_convert_index(orig_to_chartok, end_char, is_start=False)])
    unique_id = windowing.write(EncodedExample(
        query, [sp.PieceToId(t) for t in para_tokens], tok_start_to_orig, tok_end_to_orig,
        answer, example.is_impossible,
        # Padding included, as the original's.
        window_tokens=lambda ids, *_: [sp.IdToPiece(i) for i in ids]),
        example_index, unique_id, output_fn)
  return unique_id - FIRST_UNIQUE_ID


class FeatureWriter:
  """Writes InputFeatures as the original's tf.train.Examples (atomically, on close()). With
  filename None it only counts them: a conversion made again for the bookkeeping of records
  that are already written (they stay as they are)."""

  def __init__(self, filename, is_training):
    self.filename = filename
    self.is_training = is_training
    self.num_features = 0
    self._writer = AtomicTFRecordWriter(filename) if filename is not None else None

  def process_feature(self, feature):
    self.num_features += 1
    if self._writer is None:
      return
    fields = collections.OrderedDict(
        unique_ids=int64_feature([feature.unique_id]),
        input_ids=int64_feature(feature.input_ids),
        input_mask=int64_feature(feature.input_mask),
        segment_ids=int64_feature(feature.segment_ids),
        p_mask=int64_feature(feature.p_mask))
    if self.is_training:
      fields["start_positions"] = int64_feature([feature.start_position])
      fields["end_positions"] = int64_feature([feature.end_position])
      fields["is_impossible"] = int64_feature([int(bool(feature.is_impossible))])
    self._writer.write(encode_example(fields))

  def close(self):
    if self._writer is not None:
      self._writer.close()

  def abort(self):
    if self._writer is not None:
      self._writer.abort()
