"""SQuAD-format examples and features for WordPiece models (--vocab_file), as the official
CMRC 2018 BERT baseline (ymcui/cmrc2018, baseline/run_cmrc2018_drcd_baseline.py) makes them.

The paragraph is cut into the baseline's words (albert_tf.tokenization.cmrc.split_words: every
CJK character and punctuation mark a word of its own); a whitespace character belongs to the word
before it. Each word is cut into WordPiece pieces, and windows, max-context and answer positions
follow BERT's run_squad. Training locates answers[0] at the first occurrence of its text in the
context (not at answer_start), then narrows it with BERT's answer-span improvement.

The features are albert_tf.tasks.squad.features.InputFeatures, so that the SentencePiece path's
writer, model and post-processing serve them unchanged: tok_start/end_to_orig_index hold each
piece's first and last character in the raw paragraph (a piece's own characters where the
word's pieces spell it exactly, else its whole word), so that answers are cut from the original
text, its case and spaces kept, without the spaces the tokenizer inserted.
"""

import dataclasses
import functools
import logging

from albert_tf.core import errors
from albert_tf.tasks.squad.data import SquadExample, _field, _questions, load_squad_json
from albert_tf.tasks.squad.features import FIRST_UNIQUE_ID, EncodedExample, Windowing
from albert_tf.tokenization.cmrc import split_words
from albert_tf.tokenization.text import is_whitespace

logger = logging.getLogger("albert_tf")

UNK = "[UNK]"


@dataclasses.dataclass
class WordExample(SquadExample):
  """A SquadExample with the baseline's paragraph words. start_position/end_position are word
  indices here (training only), word_starts/word_ends each word's first and last character in
  paragraph_text."""
  doc_tokens: list = dataclasses.field(default_factory=list)
  word_starts: list = dataclasses.field(default_factory=list)
  word_ends: list = dataclasses.field(default_factory=list)
  char_to_word_offset: list = dataclasses.field(default_factory=list)


def paragraph_words(paragraph_text, do_lower_case, where):
  """(doc_tokens, char_to_word_offset, word_starts, word_ends) of a paragraph, as the baseline.

  A whitespace character maps to the word before it (-1 before the first word).

  Raises:
    errors.DataFormatError: a character that str.split() breaks on but the baseline does not
      count as whitespace (U+000B, U+000C, U+001C-U+001F, U+0085, U+2028, U+2029): the
      baseline fails on it too (its words no longer spell the paragraph).
  """
  words = split_words(paragraph_text, do_lower_case)
  doc_tokens, char_to_word, starts, ends = [], [], [], []
  current, first = "", 0
  for i, char in enumerate(paragraph_text):
    if is_whitespace(char):
      char_to_word.append(len(doc_tokens) - 1)
      continue
    if not current:
      first = i
    current += char
    char_to_word.append(len(doc_tokens))
    if do_lower_case:
      current = current.lower()
    if len(doc_tokens) < len(words) and current == words[len(doc_tokens)]:
      doc_tokens.append(current)
      starts.append(first)
      ends.append(i)
      current = ""
  if current or len(doc_tokens) != len(words):
    raise errors.DataFormatError(
        f"{where}: its context cannot be cut into words as the CMRC 2018 baseline cuts it, "
        f"at character {first} ({paragraph_text[first:first + 10]!r}): a character that "
        "str.split() breaks on but the baseline does not count as whitespace (U+000B, U+000C, "
        "U+001C-U+001F, U+0085, U+2028, U+2029) splits a word; replace it by a space")
  return doc_tokens, char_to_word, starts, ends


def read_examples(input_file, is_training, do_lower_case):
  """WordExamples of a SQuAD-format json file (CMRC 2018, DRCD), in file order.

  A training answer whose text is not in the context, or does not match the words found there,
  is skipped and logged (the baseline stops there: a crash or a debugger prompt). No usable
  question is an error.
  """
  examples, skipped = [], 0
  words_of = {}
  for where, context, qa in _questions(load_squad_json(input_file), input_file):
    question = _field(qa, "question", str, where)
    if id(context) not in words_of:
      words_of.clear()  # a paragraph's questions come together
      words_of[id(context)] = paragraph_words(context, do_lower_case, where)
    doc_tokens, char_to_word, starts, ends = words_of[id(context)]
    example = WordExample(qa["id"], question, context, doc_tokens=doc_tokens,
                          word_starts=starts, word_ends=ends, char_to_word_offset=char_to_word)
    if is_training:
      example.is_impossible = bool(qa.get("is_impossible", False))
      if not example.is_impossible and not _locate_answer(example, qa, do_lower_case, where):
        skipped += 1
        continue
    examples.append(example)
  if skipped:
    logger.info(f"skipped {skipped} of {len(examples) + skipped} training questions of "
                f"{input_file}: their answer text is not in the context")
  if not examples:
    raise errors.DataFormatError(f"SQuAD file {input_file} has no usable questions: check that "
                                 "it is the right file")
  return examples


def _locate_answer(example, qa, do_lower_case, where):
  """Sets the example's answer (answers[0]) to word positions; False when it is not found."""
  answers = _field(qa, "answers", list, where)
  if not answers:
    raise errors.DataFormatError(
        f"{where}: for training, a question needs an answer; mark an unanswerable one "
        "\"is_impossible\": true (SQuAD 2.0)")
  text = _field(answers[0], "text", str, f"{where}, answer")
  if not text.strip():
    raise errors.DataFormatError(f"{where}: the answer text is empty: fix or remove it")
  context = example.paragraph_text
  if text not in context:
    logger.info(f"Could not find answer: {where}: {text!r}")
    return False
  offset = context.index(text)
  start = example.char_to_word_offset[offset]
  end = example.char_to_word_offset[offset + len(text) - 1]
  actual = "".join(example.doc_tokens[start:end + 1])
  cleaned = "".join(text.strip().split())
  if do_lower_case:
    cleaned = cleaned.lower()
  if cleaned not in actual:
    logger.info(f"Could not find answer: {where}: {actual!r} vs. {cleaned!r}")
    return False
  example.orig_answer_text = text
  example.start_position, example.end_position = start, end
  return True


def _piece_chars(word, pieces, first, last):
  """(start, end) raw-character offsets of each piece of one word spanning first..last: each
  piece's own characters where the pieces spell the word exactly (no [UNK], lower-casing kept
  the length), else the whole word for every piece."""
  lengths = [len(p[2:]) if i and p.startswith("##") else len(p) for i, p in enumerate(pieces)]
  if UNK in pieces or sum(lengths) != last - first + 1 or len(word) != last - first + 1:
    return [(first, last)] * len(pieces)
  spans, at = [], first
  for n in lengths:
    spans.append((at, at + n - 1))
    at += n
  return spans


def paragraph_pieces(example, tokenizer):
  """The WordPiece pieces of an example's words, with (per piece) its word and first and last
  raw character, and (per word) its first piece.

  Returns (pieces, tok_to_orig, orig_to_tok, piece_starts, piece_ends).
  """
  pieces_out, tok_to_orig, orig_to_tok, starts, ends = [], [], [], [], []
  for i, word in enumerate(example.doc_tokens):
    orig_to_tok.append(len(pieces_out))
    pieces = tokenizer.tokenize(word)
    for piece, (first, last) in zip(pieces, _piece_chars(
        word, pieces, example.word_starts[i], example.word_ends[i])):
      tok_to_orig.append(i)
      pieces_out.append(piece)
      starts.append(first)
      ends.append(last)
  return pieces_out, tok_to_orig, orig_to_tok, starts, ends


def improve_answer_span(doc_tokens, start, end, tokenizer, answer_text):
  """The first (new_start, new_end) inside start..end whose pieces equal the answer's pieces
  (BERT's _improve_answer_span), else (start, end)."""
  answer = " ".join(tokenizer.tokenize(answer_text))
  for new_start in range(start, end + 1):
    for new_end in range(end, new_start - 1, -1):
      if " ".join(doc_tokens[new_start:new_end + 1]) == answer:
        return new_start, new_end
  return start, end


def _window_tokens(query, doc_pieces, input_ids, span_start, span_length):
  """The tokens of one window: [CLS] query [SEP] pieces [SEP], unpadded as the baseline's
  (input_ids, padded, are not needed)."""
  del input_ids
  return ["[CLS]"] + query + ["[SEP]"] + doc_pieces[span_start:span_start + span_length] + [
      "[SEP]"]


def convert_examples_to_features(examples, tokenizer, max_seq_length, doc_stride,
                                 max_query_length, is_training, output_fn):
  """Calls output_fn(InputFeatures) for every window of every WordExample, unique ids counting
  up from 1000000000 (the baseline's). `tokenizer` is a
  albert_tf.tokenization.cmrc.CmrcTokenizer. Training windows that do not hold the answer keep
  start = end = 0 (is_impossible). Returns the number of features.

  Args:
    examples: WordExamples of read_examples.
    tokenizer: the CmrcTokenizer of the vocabulary.
    max_seq_length, doc_stride, max_query_length: window sizes in pieces.
    is_training: whether to give answer positions.
    output_fn: called with each InputFeatures (input_ids, input_mask, segment_ids, p_mask
      [max_seq_length]; tokens unpadded, as the baseline's).
  """
  cls_id, sep_id = tokenizer.convert_tokens_to_ids(["[CLS]", "[SEP]"])
  windowing = Windowing(max_seq_length, doc_stride, cls_id, sep_id, is_training,
                        ordered_answers=False)  # the baseline's test: no check that start <= end
  unique_id = FIRST_UNIQUE_ID
  for example_index, example in enumerate(examples):
    query = tokenizer.tokenize(example.question_text)[:max_query_length]
    doc_pieces, tok_to_orig, orig_to_tok, piece_starts, piece_ends = paragraph_pieces(
        example, tokenizer)

    answer = None
    if is_training and not example.is_impossible:
      tok_start = orig_to_tok[example.start_position]
      if example.end_position < len(example.doc_tokens) - 1:
        tok_end = orig_to_tok[example.end_position + 1] - 1
      else:
        tok_end = len(doc_pieces) - 1
      answer = improve_answer_span(doc_pieces, tok_start, tok_end, tokenizer,
                                   example.orig_answer_text)

    unique_id = windowing.write(EncodedExample(
        tokenizer.convert_tokens_to_ids(query), tokenizer.convert_tokens_to_ids(doc_pieces),
        piece_starts, piece_ends, answer,
        None,  # the baseline's prediction features leave is_impossible unset
        functools.partial(_window_tokens, query, doc_pieces), piece_words=tok_to_orig),
        example_index, unique_id, output_fn)
  return unique_id - FIRST_UNIQUE_ID
