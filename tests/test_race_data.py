"""RACE examples and features against the original's (race_utils) on the fixture."""

import json
import os

import pytest

from albert_tf.finetuning import race
from albert_tf.tokenization import FullTokenizer
from helpers import TESTDATA
from tfrecord_utils import read_examples

RACE = os.path.join(TESTDATA, "original_finetuning", "race")
SPM = os.path.join(TESTDATA, "original_pretraining_data", "30k-clean-tiny.model")


@pytest.mark.parametrize("split", ["train", "dev", "test"])
def test_features_equal_the_original(split, tmp_path):
  with open(os.path.join(RACE, "summary.json")) as f:
    summary = json.load(f)
  processor = race.RaceProcessor(use_spm=True, do_lower_case=True)
  examples = processor.get_examples(RACE, split)
  assert len(examples) == summary["counts"][split]
  out = str(tmp_path / f"{split}.tf_record")
  race.file_based_convert_examples_to_features(
      examples, processor.get_labels(), summary["max_seq_length"],
      FullTokenizer(spm_model_file=SPM), out, summary["max_qa_length"])
  expected = read_examples(os.path.join(RACE, f"expected_{split}.tfrecord"))
  assert read_examples(out) == expected
  assert len(expected[0]["input_ids"]) == 4 * summary["max_seq_length"]


def test_blanks_levels_and_errors(tmp_path):
  processor = race.RaceProcessor()
  examples = processor.get_examples(RACE, "train")
  assert examples and all(len(e.endings) == 4 for e in examples)
  middle = race.RaceProcessor(middle_only=True).get_examples(RACE, "train")
  high = race.RaceProcessor(high_only=True).get_examples(RACE, "train")
  assert len(middle) + len(high) == len(examples) and middle and high
  article = {"id": "a", "article": "Text.", "answers": ["C"],
             "questions": ["The _ is here."], "options": [["cat", "dog", "cow", "owl"]]}
  [example] = processor._article_examples(article)  # pylint: disable=protected-access
  assert example.endings == ["the cat is here.", "the dog is here.", "the cow is here.",
                             "the owl is here."] and example.label == 2
  article["questions"] = ["Which one?"]
  [example] = processor._article_examples(article)  # pylint: disable=protected-access
  assert example.endings[1] == "which one? dog"
  with pytest.raises(FileNotFoundError, match="RACE directory not found"):
    processor.get_examples(str(tmp_path), "train")
  with pytest.raises(ValueError):
    race.RaceProcessor(high_only=True, middle_only=True)
