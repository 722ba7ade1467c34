"""Entity-level precision, recall and F1 as conlleval and seqeval's default mode compute them,
and token accuracy. No TensorFlow.

Chunks are read as seqeval 1.2.2's `get_entities` reads them (one lenient reading of IOB1, IOB2
and IOBES alike): an `I-` after `O` or after another type opens an entity, an `E-` or `S-`
closes one. An entity counts as correct when its type, first and last word all match. Scores are
micro-averaged over entities; 0 where a denominator is 0 (seqeval's zero_division default).
"""

import collections


def _split(tag):
  """(prefix letter, type) as seqeval reads a tag: `O` has type `_`, as an untyped `B`."""
  return tag[0], tag[1:].split("-", maxsplit=1)[-1] or "_"


def _ends(prev_tag, tag, prev_type, type_):
  return (prev_tag in ("E", "S")
          or (prev_tag in ("B", "I") and tag in ("B", "S", "O"))
          or (prev_tag not in ("O", ".") and prev_type != type_))


def _starts(prev_tag, tag, prev_type, type_):
  return (tag in ("B", "S")
          or (prev_tag in ("E", "S", "O") and tag in ("E", "I"))
          or (tag not in ("O", ".") and prev_type != type_))


def get_entities(tags):
  """The entities of one sentence's tags.

  Args:
    tags: a sequence of tag strings (any of IOB1, IOB2, IOBES).

  Returns:
    A list of (type, first word index, last word index), in order.
  """
  chunks, prev_tag, prev_type, begin = [], "O", "", 0
  for i, tag in enumerate(list(tags) + ["O"]):
    letter, type_ = _split(tag)
    if _ends(prev_tag, letter, prev_type, type_):
      chunks.append((prev_type, begin, i - 1))
    if _starts(prev_tag, letter, prev_type, type_):
      begin = i
    prev_tag, prev_type = letter, type_
  return chunks


def _ratio(numerator, denominator):
  return numerator / denominator if denominator else 0.0


def _scores(correct, predicted, gold):
  precision, recall = _ratio(correct, predicted), _ratio(correct, gold)
  return precision, recall, _ratio(2 * precision * recall, precision + recall)


def entity_metrics(gold_sentences, predicted_sentences) -> dict:
  """Entity-level and token-level scores of predicted tags against gold ones.

  Args:
    gold_sentences: a list of sentences, each a list of gold tags.
    predicted_sentences: the same shape, the predicted tags.

  Returns:
    {precision, recall, f1 (micro over entities), accuracy (over words),
     <TYPE>_precision, <TYPE>_recall, <TYPE>_f1 for every type in gold or predictions}.

  Raises:
    ValueError: when the two disagree in sentence count or a sentence's length.
  """
  if len(gold_sentences) != len(predicted_sentences):
    raise ValueError(f"entity_metrics: {len(gold_sentences)} gold sentences but "
                     f"{len(predicted_sentences)} predicted")
  gold_count, predicted_count, correct = (collections.Counter() for _ in range(3))
  words = same = 0
  for index, (gold, predicted) in enumerate(zip(gold_sentences, predicted_sentences)):
    if len(gold) != len(predicted):
      raise ValueError(f"entity_metrics: sentence {index} has {len(gold)} gold tags but "
                       f"{len(predicted)} predicted")
    words += len(gold)
    same += sum(g == p for g, p in zip(gold, predicted))
    gold_entities, predicted_entities = set(get_entities(gold)), set(get_entities(predicted))
    gold_count.update(t for t, _, _ in gold_entities)
    predicted_count.update(t for t, _, _ in predicted_entities)
    correct.update(t for t, _, _ in gold_entities & predicted_entities)
  precision, recall, f1 = _scores(sum(correct.values()), sum(predicted_count.values()),
                                  sum(gold_count.values()))
  result = {"precision": precision, "recall": recall, "f1": f1,
            "accuracy": _ratio(same, words)}
  for type_ in sorted(set(gold_count) | set(predicted_count)):
    scores = _scores(correct[type_], predicted_count[type_], gold_count[type_])
    for name, value in zip(("precision", "recall", "f1"), scores):
      result[f"{type_}_{name}"] = value
  return result
