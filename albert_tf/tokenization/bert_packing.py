"""TF Hub's preprocessing steps for BERT-style encoders, in TF ops: tokenize to a RaggedTensor of
ids, and pack 1 or 2 segments as BertPackInputs does (tensorflow_text's RoundRobinTrimmer, then
[CLS] a [SEP] b [SEP], padded). Used by the TF Hub preprocessing SavedModel
(albert_tf.export.tfhub) and the Keras layer AlbertPreprocessor.

Not tensorflow_text's own trimmer: its RoundRobinTrim op is newer than the tensorflow-text that TF
Serving images link (see albert_tf.export.serving_ops). For two segments round-robin trimming
keeps what the original's _truncate_seq_pair keeps (a takes ceil(budget / 2) when both are long,
the shorter keeps all of itself otherwise), so in_graph.truncated_pair_lengths computes it.

Unlike the classifier features of PackingTokenizer.pack, an empty second segment still gets its
[SEP] and the length budget of two segments, as BertPackInputs has it.
"""

import tensorflow as tf

from albert_tf.tokenization.in_graph import truncated_pair_lengths
from albert_tf.tokenization.in_graph_wordpiece import WordpieceInGraphTokenizer

# The names of TF Hub's encoder inputs (the Reusable SavedModel API for text encoders).
WORD_IDS, MASK, TYPE_IDS = "input_word_ids", "input_mask", "input_type_ids"
# The pieces TF Hub's special-tokens dict names, per tokenizer kind.
_SENTENCEPIECE_SPECIALS = {"start_of_sequence_id": "[CLS]", "end_of_segment_id": "[SEP]",
                           "padding_id": "<pad>", "mask_id": "[MASK]"}
_WORDPIECE_SPECIALS = {"start_of_sequence_id": "[CLS]", "end_of_segment_id": "[SEP]",
                       "padding_id": "[PAD]", "mask_id": "[MASK]"}


def special_tokens(tokenizer):
  """TF Hub's special-tokens dict of an in-graph tokenizer (InGraphTokenizer or
  WordpieceInGraphTokenizer): {vocab_size, start_of_sequence_id, end_of_segment_id, padding_id,
  mask_id} as Python ints. A special piece the vocabulary lacks is left out, as TF Hub's
  preprocessors leave it out; padding_id is then 0."""
  if isinstance(tokenizer, WordpieceInGraphTokenizer):
    names = _WORDPIECE_SPECIALS
    ids = tokenizer.table.lookup(tf.constant(list(names.values()))).numpy()
    found = [int(i) for i in ids]
    present = [i >= 0 for i in found]
  else:
    names = _SENTENCEPIECE_SPECIALS
    found = [int(i) for i in tokenizer.sp.string_to_id(tf.constant(list(names.values())))]
    # SentencePiece maps a piece it lacks to <unk>.
    present = [tokenizer.sp.id_to_string(i).numpy().decode() == piece
               for i, piece in zip(found, names.values())]
  special = {"vocab_size": tokenizer.vocab_size}
  special.update({key: i for key, i, ok in zip(names, found, present) if ok})
  special.setdefault("padding_id", 0)
  return special


def tokenize(tokenizer, text):
  """TF Hub's `.tokenize`: [B] strings -> ids as the tokenizer's FullTokenizer gives them, int32:
  SentencePiece [B, (pieces)]; WordPiece [B, (words), (pieces)], as TF Hub's BertTokenizer."""
  if isinstance(tokenizer, WordpieceInGraphTokenizer):
    words = tokenizer.words(text)
    pieces = tokenizer.wordpiece.tokenize(words.flat_values)  # [W, (p)]
    return words.with_flat_values(tf.cast(tokenizer.table.lookup(pieces), tf.int32))
  return tokenizer.ids(text)


def _leading(x, lengths):
  """The first lengths[b] items of each row b of x: ragged [B, (n)] -> [B, (<= n)]."""
  # A gather of the kept values: a few ops, where ragged.boolean_mask traces hundreds.
  lengths = tf.cast(lengths, x.row_splits.dtype)
  starts = x.row_starts()
  kept = tf.ragged.range(starts, starts + lengths).flat_values
  return tf.RaggedTensor.from_row_lengths(tf.gather(x.values, kept), lengths)


def round_robin_lengths(lengths, budget):
  """Each segment's length after round-robin trimming to `budget` tokens in all.

  Args:
    lengths: a list of 1 or 2 int32 [B] tensors, the segments' lengths.
    budget: int32 scalar, the tokens left for the segments.

  Returns:
    A list of int32 [B] tensors, the kept lengths.
  """
  if len(lengths) == 1:
    return [tf.minimum(lengths[0], budget)]
  if len(lengths) == 2:
    return list(truncated_pair_lengths(lengths[0], lengths[1], budget))
  raise ValueError(f"bert_pack_inputs packs 1 or 2 segments, got {len(lengths)}")


def bert_pack_inputs(segments, seq_length, start_of_sequence_id, end_of_segment_id,
                     padding_id=0):
  """[CLS] a [SEP] (b [SEP]), trimmed round-robin to seq_length and padded, as BertPackInputs.

  Args:
    segments: a list of 1 or 2 RaggedTensors of ids, int32 [B, (n)] or [B, (words), (pieces)]
      (words are merged).
    seq_length: int or int32 scalar tensor, the packed length T.
    start_of_sequence_id, end_of_segment_id, padding_id: ints ([CLS], [SEP], the padding id).

  Returns:
    {input_word_ids, input_mask, input_type_ids}: int32 [B, T]; type ids 0 for [CLS], a and its
    [SEP], 1 for b and its [SEP]; mask 1 on those tokens, 0 on padding.
  """
  segments = [s.merge_dims(1, -1) if s.ragged_rank > 1 else s for s in segments]
  segments = [tf.cast(s, tf.int32) for s in segments]
  seq_length = tf.cast(seq_length, tf.int32)
  batch = segments[0].nrows(out_type=tf.int32)
  budget = tf.maximum(seq_length - len(segments) - 1, 0)
  kept = round_robin_lengths([tf.cast(s.row_lengths(), tf.int32) for s in segments], budget)
  parts = [tf.RaggedTensor.from_tensor(tf.fill([batch, 1], start_of_sequence_id))]
  types = [tf.RaggedTensor.from_tensor(tf.zeros([batch, 1], tf.int32))]
  for k, (segment, length) in enumerate(zip(segments, kept)):
    piece = tf.concat([_leading(segment, length),
                       tf.RaggedTensor.from_tensor(tf.fill([batch, 1], end_of_segment_id))], 1)
    parts.append(piece)
    types.append(tf.ones_like(piece) * k)
  ids = tf.concat(parts, axis=1)
  shape = tf.stack([batch, seq_length])
  return {
      WORD_IDS: ids.to_tensor(padding_id, shape=shape),
      MASK: tf.ones_like(ids).to_tensor(0, shape=shape),
      TYPE_IDS: tf.concat(types, axis=1).to_tensor(0, shape=shape),
  }
