"""Classifier features as the original writes them, and the tf.data input that reads them back
with each batch trimmed to its longest real sequence.

Feature records (the original's cached `<task>_train.tf_record` etc.): input_ids, input_mask,
segment_ids int64 [max_seq_length]; label_ids int64 [1] (float [1] for regression; multi-label:
int64 [num_labels], 1 for each of the example's labels); is_real_example int64 [1].
"""

import dataclasses
import logging

from albert_tf.core import errors
from albert_tf.data.tfrecords import AtomicTFRecordWriter, encode_example, float_feature
from albert_tf.data.tfrecords import int64_feature
from albert_tf.finetuning.text_data import PaddingInputExample, pack_pair

logger = logging.getLogger("albert_tf")


@dataclasses.dataclass
class InputFeatures:
  input_ids: list
  input_mask: list
  segment_ids: list
  label_id: object
  is_real_example: bool = True


def truncate_seq_pair(tokens_a, tokens_b, max_length):
  """Pops tokens from the end of the longer list (b on ties) until both fit in max_length."""
  while len(tokens_a) + len(tokens_b) > max_length:
    if len(tokens_a) > len(tokens_b):
      tokens_a.pop()
    else:
      tokens_b.pop()


def convert_single_example(example, label_list, max_seq_length, tokenizer, regression=False,
                           multi_label=False):
  """An InputExample (its texts already normalised by the processor) -> InputFeatures; with
  multi_label, example.label is a list of names and label_id their multi-hot [num_labels]."""
  if isinstance(example, PaddingInputExample):
    zeros = [0] * max_seq_length
    return InputFeatures(list(zeros), list(zeros), list(zeros),
                         [0] * len(label_list) if multi_label else 0, is_real_example=False)
  tokens_a = tokenizer.tokenize_preprocessed(example.text_a)
  tokens_b = tokenizer.tokenize_preprocessed(example.text_b) if example.text_b else None
  if tokens_b:
    truncate_seq_pair(tokens_a, tokens_b, max_seq_length - 3)
  else:
    tokens_a = tokens_a[:max_seq_length - 2]
  input_ids, input_mask, segment_ids = pack_pair(tokenizer, tokens_a, tokens_b, max_seq_length)
  if regression:
    label_id = example.label
  else:
    names = example.label if multi_label else [example.label]
    try:
      ids = [label_list.index(name) for name in names]
    except ValueError:
      raise errors.DataFormatError(
          f"example {example.guid} has label {example.label!r}, not one of the "
          f"task's labels {label_list}") from None
    label_id = [int(i in ids) for i in range(len(label_list))] if multi_label else ids[0]
  return InputFeatures(input_ids, input_mask, segment_ids, label_id)


def feature_record(feature, regression=False):
  """The serialized tf.train.Example, fields in the original's order."""
  label_ids = feature.label_id if isinstance(feature.label_id, list) else [feature.label_id]
  label = float_feature(label_ids) if regression else int64_feature(label_ids)
  return encode_example({
      "input_ids": int64_feature(feature.input_ids),
      "input_mask": int64_feature(feature.input_mask),
      "segment_ids": int64_feature(feature.segment_ids),
      "label_ids": label,
      "is_real_example": int64_feature([int(feature.is_real_example)]),
  })


def file_based_convert_examples_to_features(examples, label_list, max_seq_length, tokenizer,
                                            output_file, regression=False, multi_label=False):
  """Writes the examples' features to output_file (atomically: complete or absent); multi_label:
  label_ids multi-hot [num_labels]."""
  with AtomicTFRecordWriter(output_file) as writer:
    for i, example in enumerate(examples):
      if i % 10000 == 0:
        logger.info(f"Writing example {i} of {len(examples)}")
      feature = convert_single_example(example, label_list, max_seq_length, tokenizer,
                                       regression, multi_label)
      writer.write(feature_record(feature, regression))
  return len(examples)
