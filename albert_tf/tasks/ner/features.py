"""NER features: each word tokenized alone, its label on its first piece, long sentences cut
into overlapping windows (SQuAD's doc_stride) with each word predicted from the window where it
has the most context (SQuAD's max-context rule), so every word gets exactly one prediction.

Feature records, all int64: input_ids, input_mask, segment_ids (0), label_ids, label_weights
(1 on the first piece of a word predicted from this window whose tag is in the label list),
word_index (that word's index in its sentence, -1 elsewhere) [max_seq_length]; sentence_index
[1].
"""

from albert_tf.core import io
from albert_tf.data.tfrecords import AtomicTFRecordWriter, encode_example, int64_feature
from albert_tf.finetuning.windows import doc_spans, is_max_context

SEQUENCE_FEATURES = ("input_ids", "input_mask", "segment_ids", "label_ids", "label_weights",
                     "word_index")


def unk_piece(tokenizer) -> str:
  """The unknown piece of the tokenizer's vocabulary: `<unk>` (SentencePiece) or `[UNK]`."""
  return "<unk>" if tokenizer.sp_model is not None else "[UNK]"


def word_pieces(tokenizer, words) -> list:
  """Each word's pieces, tokenized alone; a word that gives none (e.g. a control character)
  becomes one unknown piece, so that every word has a first piece to predict from."""
  unk = unk_piece(tokenizer)
  return [tokenizer.tokenize(word) or [unk] for word in words]


def sentence_features(tokenizer, sentence, labels, max_seq_length, doc_stride):
  """The windows of one sentence, as dicts of the record's features (without sentence_index).

  Args:
    tokenizer: a FullTokenizer.
    sentence: a data.Sentence (tags None for an untagged test set).
    labels: the label list (a tag's id is its index).
    max_seq_length: T; a window holds up to T - 2 pieces between [CLS] and [SEP].
    doc_stride: how far a window starts after the previous one (in pieces).

  Returns:
    A list of {name: list of ints [T]}.
  """
  label_ids = {label: i for i, label in enumerate(labels)}
  pieces, first_piece = [], []
  for word in word_pieces(tokenizer, sentence.words):
    first_piece.append(len(pieces))
    pieces.extend(word)
  spans = doc_spans(len(pieces), max_seq_length - 2, doc_stride)
  features = []
  for span_index, (start, length) in enumerate(spans):
    ids = tokenizer.convert_tokens_to_ids(["[CLS]"] + pieces[start:start + length] + ["[SEP]"])
    pad = max_seq_length - len(ids)
    label_id, weight = [0] * max_seq_length, [0] * max_seq_length
    word_index = [-1] * max_seq_length
    for w, position in enumerate(first_piece):
      if start <= position < start + length and is_max_context(spans, span_index, position):
        column = 1 + position - start  # after [CLS]
        word_index[column] = w
        tag = sentence.tags[w] if sentence.tags is not None else None
        if tag in label_ids:
          label_id[column], weight[column] = label_ids[tag], 1
    features.append({"input_ids": ids + [0] * pad, "input_mask": [1] * len(ids) + [0] * pad,
                     "segment_ids": [0] * max_seq_length, "label_ids": label_id,
                     "label_weights": weight, "word_index": word_index})
  return features


def cache_inputs(source, labels, doc_stride, char_level=False):
  """What a split's features are made from, beside the tokenizer and max_seq_length: the stamp
  of their cache (finetuning.feature_cache), which another value of any field makes stale.

  Args:
    source: the CoNLL file (its contents are hashed).
    labels: the label list, in id order.
    doc_stride: the windows' stride.
    char_level: whether the words were split into characters (run_ner --char_level).
  """
  # The contents alone: the same file under another path spelling is the same input.
  return {"source_sha256": io.sha256(source),
          "labels": list(labels), "doc_stride": doc_stride, "char_level": bool(char_level)}


def write_features(sentences, tokenizer, labels, max_seq_length, doc_stride, path) -> int:
  """Writes the features of every sentence to TFRecord file `path` (atomically). Returns the
  number of records."""
  with AtomicTFRecordWriter(path) as writer:
    for index, sentence in enumerate(sentences):
      for feature in sentence_features(tokenizer, sentence, labels, max_seq_length, doc_stride):
        record = {name: int64_feature(feature[name]) for name in SEQUENCE_FEATURES}
        record["sentence_index"] = int64_feature([index])
        writer.write(encode_example(record))
    return writer.count
