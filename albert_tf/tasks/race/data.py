"""RACE examples and multiple-choice features as the original's race_utils makes them.

Each question becomes 4 sequences [CLS] article [SEP] question+option [SEP]: a `_` blank in the
question is filled with the option (else the option follows the question), the question+option
keeps its last max_qa_length tokens, and the article is cut to fit. Records hold the 4 sequences
flattened: input_ids, input_mask, segment_ids int64 [4 * max_seq_length]; label_ids;
is_real_example.
"""

import dataclasses
import json
import logging
import os

from albert_tf.core import errors
from albert_tf.core import io
from albert_tf.data.tfrecords import AtomicTFRecordWriter, encode_example, int64_feature
from albert_tf.finetuning.text_data import PaddingInputExample, TextProcessor, pack_pair

logger = logging.getLogger("albert_tf")

LABELS = ["A", "B", "C", "D"]


@dataclasses.dataclass
class RaceExample:
  example_id: str
  context_sentence: str
  endings: list      # question + option, one per choice
  label: int


def split_dir(data_dir, split):
  """The folder of one RACE split ("train", "dev", "test") under --data_dir."""
  return os.path.join(data_dir, "RACE", split)


class RaceProcessor(TextProcessor):
  """Reads RACE/{train,dev,test}/{middle,high}/*.txt (one article per line, as json)."""

  def __init__(self, use_spm=True, do_lower_case=True, high_only=False, middle_only=False):
    if high_only and middle_only:
      raise errors.UsageError("high_only and middle_only exclude each other")
    super().__init__(use_spm, do_lower_case)
    self.levels = [level for level, skip in (("middle", high_only), ("high", middle_only))
                   if not skip]

  def get_labels(self):
    return list(LABELS)

  def get_examples(self, data_dir, split):
    return self.read_examples(split_dir(data_dir, split))

  def read_examples(self, split_folder):
    """Examples of middle then high school articles; files in name order (the original takes
    the directory's listing order). No question at all is an error (an empty dev or test set
    would fail only after training)."""
    examples, seen = [], {}
    for level in self.levels:
      directory = os.path.join(split_folder, level)
      if not io.isdir(directory):
        raise FileNotFoundError(f"RACE directory not found: {directory}")
      for name in io.listdir(directory):
        if name.endswith(".txt"):
          examples.extend(self._file_examples(os.path.join(directory, name), seen))
    if not examples:
      raise errors.DataFormatError(
          f"no RACE questions in {split_folder}: its "
          f"{' and '.join(self.levels)} folders hold no *.txt file with an article")
    return examples

  def _file_examples(self, path, seen=None):
    """Examples of one RACE file: an article (json) per line. `seen` ({article id: where}, over
    a split) makes an id used twice an error naming both places."""
    examples = []
    with io.open_text(path) as f:
      for number, line in enumerate(f, 1):
        if not line.strip():
          continue
        where = f"RACE file {path}, line {number}"
        try:
          article = json.loads(line.strip())
        except json.JSONDecodeError as e:
          raise errors.DataFormatError(
              f"{where} is not valid JSON ({e.msg}, column {e.colno}): each line "
              "must hold one article") from None
        examples.extend(self._article_examples(article, where))
        if seen is not None:
          if article["id"] in seen:
            raise errors.DataFormatError(
                f"{where}: article id {article['id']!r} is used twice, also at "
                f"{seen[article['id']]}: give each article its own id")
          seen[article["id"]] = where
    return examples

  def _article_examples(self, article, where="RACE article"):
    _check_article(article, where)
    context = self.process_text(article["article"])
    out = []
    for number, (answer, question, options) in enumerate(
        zip(article["answers"], article["questions"], article["options"])):
      num_options = len(options) if isinstance(options, list) else 0
      if answer not in LABELS or num_options < len(LABELS):
        raise errors.DataFormatError(
            f"{where}, question {number} of article {article['id']} ({str(question)[:60]!r}): "
            f"the answer must be one of {', '.join(LABELS)} for {len(LABELS)} options; found "
            f"answer {answer!r} and {num_options} options")
      question = self.process_text(question)
      endings = []
      for option in options[:len(LABELS)]:  # the original reads the first 4
        option = self.process_text(option)
        endings.append(question.replace("_", option) if "_" in question
                       else " ".join([question, option]))
      out.append(RaceExample(article["id"], context, endings, LABELS.index(answer)))
    return out


def _check_article(article, where):
  """Raises naming `where` unless `article` has RACE's fields, a question for every answer and
  option list."""
  kinds = {"id": str, "article": str, "questions": list, "options": list, "answers": list}
  wrong = [k for k, kind in kinds.items()
           if not isinstance(article, dict) or not isinstance(article.get(k), kind)]
  if wrong:
    raise errors.DataFormatError(
        f"{where}: the article needs {', '.join(wrong)} (RACE's fields: id, "
        "article, questions, options, answers)")
  counts = [len(article[k]) for k in ("answers", "questions", "options")]
  if len(set(counts)) != 1:
    raise errors.DataFormatError(
        f"{where}: article {article['id']} has {counts[0]} answers, {counts[1]} "
        f"questions and {counts[2]} option lists; each question needs one of each")


def convert_single_example(example, num_choices, max_seq_length, tokenizer, max_qa_length):
  """-> (input_ids, input_mask, segment_ids) lists of num_choices sequences, label, is_real."""
  if isinstance(example, PaddingInputExample):
    zeros = [[0] * max_seq_length for _ in range(num_choices)]
    return zeros, zeros, zeros, 0, False
  context = tokenizer.tokenize_preprocessed(example.context_sentence)
  ids, masks, segments = [], [], []
  for ending in example.endings:
    ending_tokens = tokenizer.tokenize_preprocessed(ending)[-max_qa_length:]
    context_tokens = context[:max(max_seq_length - 3 - len(ending_tokens), 0)]
    i, m, s = pack_pair(tokenizer, context_tokens, ending_tokens, max_seq_length)
    ids.append(i)
    masks.append(m)
    segments.append(s)
  return ids, masks, segments, example.label, True


def file_based_convert_examples_to_features(examples, label_list, max_seq_length, tokenizer,
                                            output_file, max_qa_length):
  """Writes the examples' features to output_file (atomically)."""
  with AtomicTFRecordWriter(output_file) as writer:
    for index, example in enumerate(examples):
      if index % 10000 == 0:
        logger.info(f"Writing example {index} of {len(examples)}")
      ids, masks, segments, label, real = convert_single_example(
          example, len(label_list), max_seq_length, tokenizer, max_qa_length)
      writer.write(encode_example({
          "input_ids": int64_feature(sum(ids, [])),
          "input_mask": int64_feature(sum(masks, [])),
          "segment_ids": int64_feature(sum(segments, [])),
          "label_ids": int64_feature([label]),
          "is_real_example": int64_feature([int(real)]),
      }))
  return len(examples)
