"""RACE examples and features against the original's (race_utils) on the fixture."""

import json
import os

import pytest

from albert_tf.tasks.classifier import data as glue
from albert_tf.tasks.race import data as race
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
  [example] = processor._article_examples(article)
  assert example.endings == ["the cat is here.", "the dog is here.", "the cow is here.",
                             "the owl is here."] and example.label == 2
  article["questions"] = ["Which one?"]
  [example] = processor._article_examples(article)
  assert example.endings[1] == "which one? dog"
  with pytest.raises(FileNotFoundError, match="RACE directory not found"):
    processor.get_examples(str(tmp_path), "train")
  with pytest.raises(ValueError):
    race.RaceProcessor(high_only=True, middle_only=True)


def _article(**changes):
  return dict({"id": "high/1.txt", "article": "The cat sat.", "answers": ["A", "D"],
               "questions": ["Who sat?", "Where?"],
               "options": [["cat", "dog", "cow", "owl"], ["mat", "bed", "box", "car"]]},
              **changes)


def _race_dir(tmp_path, split="dev", lines=None):
  """A RACE folder whose <split>/high/1.txt holds `lines` (and <split>/middle is empty)."""
  for level in ("middle", "high"):
    (tmp_path / "RACE" / split / level).mkdir(parents=True)
  path = tmp_path / "RACE" / split / "high" / "1.txt"
  if lines is not None:
    path.write_text("\n".join(lines) + "\n")
  return path


@pytest.mark.parametrize("lines, line, message", [
    ([json.dumps(_article()), json.dumps(_article(answers=["A", "E"]))], 2,
     r"question 1 of article high/1.txt \('Where\?'\): the answer must be one of A, B, C, D for "
     r"4 options; found answer 'E' and 4 options"),
    ([json.dumps(_article(options=[["cat", "dog", "cow", "owl"], ["mat", "bed", "box"]]))], 1,
     r"question 1 of article high/1.txt .*found answer 'D' and 3 options"),
    ([json.dumps(_article(answers=["a", "D"]))], 1, r"question 0 .*found answer 'a'"),
    ([json.dumps(_article()), "", '{"id": "x", '], 3,
     r"is not valid JSON \(Expecting property name enclosed in double quotes, column 12\)"),
    ([json.dumps({k: v for k, v in _article().items() if k != "options"})], 1,
     r"the article needs options"),
    ([json.dumps(_article(questions=["Who sat?"]))], 1,
     r"article high/1.txt has 2 answers, 1 questions and 2 option lists"),
])
def test_malformed_articles_name_the_file_line_and_question(tmp_path, lines, line, message):
  path = _race_dir(tmp_path, lines=lines)
  with pytest.raises(ValueError, match=f"RACE file {path}, line {line}.*{message}"):
    race.RaceProcessor().get_examples(str(tmp_path), "dev")


def test_answers_map_to_their_option(tmp_path):
  _race_dir(tmp_path, lines=[json.dumps(_article())])
  examples = race.RaceProcessor().get_examples(str(tmp_path), "dev")
  assert [(e.example_id, e.label, e.endings[e.label]) for e in examples] == [
      ("high/1.txt", 0, "who sat? cat"), ("high/1.txt", 3, "where? car")]


def test_an_empty_split_is_an_error(tmp_path):
  _race_dir(tmp_path)  # folders, no article
  with pytest.raises(ValueError, match=f"no RACE questions in {tmp_path / 'RACE' / 'dev'}"):
    race.RaceProcessor().get_examples(str(tmp_path), "dev")
  _race_dir(tmp_path, "test", lines=[json.dumps(_article(answers=[], questions=[], options=[]))])
  with pytest.raises(ValueError, match="no RACE questions"):
    race.RaceProcessor().get_examples(str(tmp_path), "test")


# GLUE's processors (albert_tf/tasks/classifier/data.py), which RACE's shares its text
# handling with.
@pytest.mark.parametrize("task, text, message", [
    ("sst-2", "sentence\tlabel\n", r"SST-2/dev.tsv has no examples"),
    ("sst-2", "", r"SST-2/dev.tsv has no examples"),
    ("sst-2", "sentence\tlabel\na fine film\t1\nno label here\n",
     r"SST-2/dev.tsv: row 2 has 1 columns \(line 3\); expected the SST-2 layout"),
    ("sts-b", "h\th\th\th\th\th\th\th\th\th\n0\t\t\t\t\t\t\ta\tb\tfive\n",
     r"STS-B/dev.tsv: row 1 \(line 2\): could not convert string to float: 'five'"),
])
def test_glue_empty_or_malformed_files_name_the_file_and_line(tmp_path, task, text, message):
  processor = glue.processor(task)
  directory = tmp_path / processor.spec.directory
  directory.mkdir()
  (directory / "dev.tsv").write_text(text)
  with pytest.raises(ValueError, match=f"{tmp_path}/{message}"):
    processor.get_dev_examples(str(tmp_path))
