"""The official CMRC 2018 metrics (ymcui/cmrc2018 cmrc2018_evaluate.py), for --metric=cmrc2018.

  EM: an answer equals the prediction after lower-casing, stripping and dropping the evaluator's
      punctuation marks.
  F1: the longest common contiguous run of segments between answer and prediction (punctuation
      dropped), where each Chinese character (U+4E00-U+9FA5) is one segment and the stretches
      between them are cut by nltk's word_tokenize; the best over the answers.
Both are in percent over every question of the dataset (a question without prediction scores 0).

nltk's word_tokenize first splits sentences with its punkt model, a data package that pip does
not install (nltk.download("punkt_tab")). Without it, the stretches are cut by the Treebank
word tokenizer alone (word_tokenize(preserve_line=True)), which is logged once: the two differ
only where a stretch holds a sentence end inside it (a "." followed by more words), where punkt
would split the "." off.
"""

import logging
import sys

from albert_tf.core import errors

logger = logging.getLogger("albert_tf")

# The evaluator's punctuation list, one character each. Its list also holds "……" (two
# characters), which never equals a single character, so it drops nothing and is left out.
PUNCTUATION = frozenset("-:_*^/\\~`+=，。：？！“”；’《》·、「」（）－～『』")

_word_tokenize = None


def word_tokenize(text):
  """nltk.word_tokenize(text), or the Treebank tokenizer alone without nltk's punkt data."""
  global _word_tokenize
  if _word_tokenize is None:
    nltk = errors.require_module("nltk", "chinese", "--metric=cmrc2018")
    try:
      nltk.word_tokenize("a. b")
      _word_tokenize = nltk.word_tokenize
    except LookupError:
      logger.warning("--metric=cmrc2018: nltk's punkt data is not installed "
                     "(python -m nltk.downloader punkt_tab); English stretches are cut by "
                     "the Treebank tokenizer alone, without punkt's sentence split")
      _word_tokenize = lambda s: nltk.word_tokenize(s, preserve_line=True)
  return _word_tokenize(text)


def _is_chinese(char):
  return "\u4e00" <= char <= "\u9fa5"


def segments(text, drop_punctuation=False):
  """The evaluator's mixed_segmentation: Chinese characters and punctuation marks one segment
  each, the stretches between them word-tokenized."""
  out, stretch = [], ""
  for char in str(text).lower().strip():
    if drop_punctuation and char in PUNCTUATION:
      continue
    if _is_chinese(char) or char in PUNCTUATION:
      if stretch:
        out.extend(word_tokenize(stretch))
        stretch = ""
      out.append(char)
    else:
      stretch += char
  if stretch:
    out.extend(word_tokenize(stretch))
  return out


def without_punctuation(text):
  return "".join(c for c in str(text).lower().strip() if c not in PUNCTUATION)


def longest_common_run(a, b):
  """Length of the longest contiguous run that lists a and b share."""
  best = 0
  previous = [0] * (len(b) + 1)
  for x in a:
    current = [0] * (len(b) + 1)
    for j, y in enumerate(b):
      if x == y:
        current[j + 1] = previous[j] + 1
        best = max(best, current[j + 1])
    previous = current
  return best


def f1(answers, prediction):
  """The best F1 of the prediction over the answers (0 for none)."""
  predicted = segments(prediction, drop_punctuation=True)
  scores = [0.0]
  for answer in answers:
    gold = segments(answer, drop_punctuation=True)
    common = longest_common_run(gold, predicted)
    if common:
      precision, recall = common / len(predicted), common / len(gold)
      scores.append(2 * precision * recall / (precision + recall))
  return max(scores)


def exact_match(answers, prediction):
  predicted = without_punctuation(prediction)
  return float(any(without_punctuation(a) == predicted for a in answers))


def evaluate(dataset, predictions):
  """{"exact_match", "f1"} in percent of a SQuAD-format "data" list against {id: text}."""
  em = f1_total = total = 0
  for article in dataset:
    for paragraph in article["paragraphs"]:
      for qa in paragraph["qas"]:
        total += 1
        if qa["id"] not in predictions:
          print(f"Unanswered question: {qa['id']}", file=sys.stderr)
          continue
        answers = [a["text"] if isinstance(a, dict) else a for a in qa["answers"]]
        prediction = str(predictions[qa["id"]])
        f1_total += f1(answers, prediction)
        em += exact_match(answers, prediction)
  return {"exact_match": 100.0 * em / total, "f1": 100.0 * f1_total / total}
