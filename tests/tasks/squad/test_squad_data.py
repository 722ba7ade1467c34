"""SQuAD features and post-processing against the original's (squad_utils) outputs on the
fixture's v1.1 and v2.0 data."""

import json
import logging
import os

import numpy as np
import pytest

from albert_tf.finetuning import windows
from albert_tf.tasks.squad import data as squad_data
from albert_tf.tokenization import FullTokenizer
from albert_tf.tasks.squad import postprocess as squad_post
from helpers import TESTDATA
from tfrecord_utils import read_examples

SQUAD = os.path.join(TESTDATA, "original_finetuning", "squad")
SPM = os.path.join(TESTDATA, "original_pretraining_data", "30k-clean-tiny.model")


def _settings(version):
  with open(os.path.join(SQUAD, version, "expected_summary.json")) as f:
    return json.load(f)


def _features(version, split, tmp_path):
  s = _settings(version)["settings"]
  is_training = split == "train"
  examples = squad_data.read_squad_examples(os.path.join(SQUAD, version, f"{split}.json"),
                                       is_training)
  path = str(tmp_path / f"{version}_{split}.tf_record")
  writer = squad_data.FeatureWriter(path, is_training)
  features = []

  def output(feature):
    features.append(feature)
    writer.process_feature(feature)
  squad_data.convert_examples_to_features(examples, FullTokenizer(spm_model_file=SPM),
                                     s["max_seq_length"], s["doc_stride"], s["max_query_length"],
                                     is_training, output, s["do_lower_case"])
  writer.close()
  return examples, features, path


@pytest.mark.parametrize("version", ["v1", "v2"])
@pytest.mark.parametrize("split", ["train", "dev"])
def test_features_equal_the_original(version, split, tmp_path):
  examples, features, path = _features(version, split, tmp_path)
  expected = read_examples(os.path.join(SQUAD, version, f"{split}.tfrecord"))
  assert read_examples(path) == expected
  assert features[0].unique_id == 1000000000
  summary = _settings(version)
  assert len(examples) == summary[f"{split}_examples"]
  if split == "dev":
    assert len(features) == summary["dev_features"]
    with open(os.path.join(SQUAD, version, "dev_features.jsonl")) as f:
      bookkeeping = [json.loads(line) for line in f]
    for ours, theirs in zip(features, bookkeeping, strict=True):
      got = {k: getattr(ours, k) for k in theirs}
      got["token_is_max_context"] = {str(k): v for k, v in ours.token_is_max_context.items()}
      assert got == theirs, ours.unique_id


def _results(version):
  outputs = np.load(os.path.join(SQUAD, version, "dev_model_outputs.npz"))
  results = {}
  for key in outputs.files:
    unique_id, field = key.split("/")
    results.setdefault(int(unique_id), {})[field] = outputs[key]
  return results


def _expected(version, name):
  with open(os.path.join(SQUAD, version, name)) as f:
    return json.load(f)


def _assert_nbest_equal(ours, theirs):
  assert list(ours) == list(theirs)
  for qid in theirs:
    assert [e["text"] for e in ours[qid]] == [e["text"] for e in theirs[qid]], qid
    for a, b in zip(ours[qid], theirs[qid]):
      for key in ("probability", "start_log_prob", "end_log_prob"):
        assert abs(a[key] - b[key]) < 1e-6, (qid, key)


def test_postprocess_v1(tmp_path):
  s = _settings("v1")
  examples, features, _ = _features("v1", "dev", tmp_path)
  predictions, nbest = squad_post.postprocess_v1(examples, features, _results("v1"),
                                            s["settings"]["n_best_size"],
                                            s["settings"]["max_answer_length"])
  assert predictions == _expected("v1", "expected_predictions.json")
  _assert_nbest_equal(nbest, _expected("v1", "expected_nbest_predictions.json"))
  dataset = _expected("v1", "dev.json")["data"]
  metrics = squad_post.evaluate_v1(dataset, predictions)
  assert metrics == pytest.approx(s["metrics"], abs=1e-9)


def test_postprocess_v2_with_threshold_search(tmp_path):
  s = _settings("v2")["settings"]
  examples, features, _ = _features("v2", "dev", tmp_path)
  dataset = _expected("v2", "dev.json")["data"]
  predictions, nbest, null_odds, metrics = squad_post.postprocess_v2(
      examples, features, _results("v2"), s["n_best_size"], s["max_answer_length"],
      s["start_n_top"], s["end_n_top"], dataset)
  assert predictions == _expected("v2", "expected_predictions.json")
  _assert_nbest_equal(nbest, _expected("v2", "expected_nbest_predictions.json"))
  expected_odds = _expected("v2", "expected_null_odds.json")
  assert list(null_odds) == list(expected_odds)
  np.testing.assert_allclose(list(null_odds.values()), list(expected_odds.values()), atol=1e-6)
  assert dict(metrics) == pytest.approx(_settings("v2")["metrics"], abs=1e-9)


def test_evaluation_definitions():
  assert squad_post.evaluate_v1([{"paragraphs": [{"qas": [
      {"id": "a", "answers": [{"text": "The Cat sat"}, {"text": "a dog"}]},
      {"id": "b", "answers": [{"text": "red apple"}]}]}]}],
      {"a": "cat sat.", "b": "apple pie"}) == pytest.approx(
          {"exact_match": 50.0, "f1": 100 * (1 + 0.5) / 2})
  dataset = [{"paragraphs": [{"qas": [{"id": "x", "answers": []},
                                      {"id": "y", "answers": [{"text": "blue"}]}]}]}]
  # Null odds above na_prob_thresh (1.0) count as "no answer": right for x, wrong for y.
  metrics = squad_post.evaluate_v2(dataset, {"x": "", "y": "blue"}, {"x": 2.0, "y": 1.5})
  assert (metrics["exact"], metrics["f1"], metrics["total"]) == (50.0, 50.0, 2)
  # The search finds the threshold that keeps y's answer: y's odds.
  assert metrics["best_f1"] == 100.0 and metrics["best_f1_thresh"] == 1.5


def test_training_requires_one_answer(tmp_path):
  path = tmp_path / "bad.json"
  path.write_text(json.dumps({"data": [{"paragraphs": [{"context": "a b", "qas": [
      {"id": "q", "question": "?", "answers": []}]}]}]}))
  with pytest.raises(ValueError, match="exactly 1 answer"):
    squad_data.read_squad_examples(str(path), is_training=True)
  with pytest.raises(FileNotFoundError):
    squad_data.read_squad_examples(str(tmp_path / "missing.json"), False)


def test_windows_and_max_context():
  spans = windows.doc_spans(10, 4, 3)
  assert spans == [(0, 4), (3, 4), (6, 4)]
  # token 4: min(1, 2) in span 1 beats span 0 (where it is absent) and span 2 (absent).
  assert windows.is_max_context(spans, 1, 4)
  # token 3: min(3, 0) in span 0 ties min(0, 3) in span 1: the first span wins.
  assert windows.is_max_context(spans, 0, 3) and not windows.is_max_context(spans, 1, 3)


def _squad_file(tmp_path, qas, context="The cat sat on the mat."):
  path = tmp_path / "squad.json"
  path.write_text(json.dumps({"data": [{"title": "t", "paragraphs": [
      {"context": context, "qas": qas}]}]}))
  return str(path)


def _qa(qid, text, start, **extra):
  return dict({"id": qid, "question": "Where?", "answers": [{"text": text,
                                                             "answer_start": start}]}, **extra)


@pytest.mark.parametrize("qas, is_training, message", [
    ([_qa("q1", "the mat", 40)], True,
     r"question q1 \(article 0, paragraph 0, question 0\): answer_start 40 .* outside its "
     r"context \(23 characters\)"),
    ([_qa("q1", "the mat", -3)], True, r"question q1 .*answer_start -3"),
    ([_qa("q1", "mat.", 20)], True, r"question q1 .*answer_start 20 with an answer of 4"),
    ([_qa("q1", " ", 3)], True, r"question q1 .*answer text is empty"),
    ([{"id": "q1", "question": "Where?"}], True, r"question q1 .*\"answers\" must be a list, "
                                                  r"found missing"),
    ([{"question": "Where?", "answers": []}], False,
     r"article 0, paragraph 0, question 0: \"id\" must be a str or int, found missing"),
    ([{"id": "q1", "answers": []}], False, r"question q1 .*\"question\" must be a str"),
    ([_qa("q1", "the mat", "19")], True, r"question q1 .*\"answer_start\" must be a int, "
                                         r"found '19'"),
    ([{"id": "q1", "question": "Where?", "answers": [{"answer_start": 1}]}], False,
     r"question q1 .*answer: \"text\" must be a str"),
])
def test_malformed_questions_name_the_file_and_question(tmp_path, qas, is_training, message):
  path = _squad_file(tmp_path, qas)
  with pytest.raises(ValueError, match=message) as error:
    squad_data.read_squad_examples(path, is_training)
  assert str(error.value).startswith(f"SQuAD file {path}")


@pytest.mark.parametrize("text, message", [
    ('{"data": [', r"is not valid JSON: Expecting value at line 1, column 11"),
    ('{"version": "1.1"}', r"has no \"data\" list"),
    ('{"data": []}', r"has no usable questions"),
    ('{"data": [{"title": "t"}]}', r"article 0: \"paragraphs\" must be a list, found missing"),
    ('{"data": [{"paragraphs": [{"qas": []}]}]}',
     r"article 0, paragraph 0: \"context\" must be a str, found missing"),
])
def test_malformed_files_name_the_file(tmp_path, text, message):
  path = tmp_path / "bad.json"
  path.write_text(text)
  for is_training in (True, False):
    with pytest.raises(ValueError, match=f"SQuAD file {path}.*{message}"):
      squad_data.read_squad_examples(str(path), is_training)


def test_training_skips_answers_not_in_their_context(tmp_path, caplog):
  path = _squad_file(tmp_path, [
      _qa("found", "the mat", 15),
      # The answer's words, whitespace aside, in the words its offsets cover: kept.
      _qa("spaced", "cat  sat", 4), _qa("in_a_word", "at", 5),
      _qa("elsewhere", "the cat", 15), _qa("absent", "dog", 4),
      {"id": "none", "question": "Who?", "answers": [], "is_impossible": True}])
  with caplog.at_level(logging.INFO, logger="albert_tf"):
    examples = squad_data.read_squad_examples(path, is_training=True)
  messages = [record.getMessage() for record in caplog.records]
  assert [(e.qas_id, e.orig_answer_text, e.start_position) for e in examples] == [
      ("found", "the mat", 15), ("spaced", "cat  sat", 4), ("in_a_word", "at", 5),
      ("none", "", -1)]
  assert len(messages) == 3
  assert messages[0].startswith(f"Could not find answer: SQuAD file {path}, question elsewhere")
  assert "question absent" in messages[1]
  assert messages[2] == (f"skipped 2 of 6 training questions of {path}: their answer text is "
                         "not at answer_start in the context")
  # Prediction does not look at the answers.
  assert len(squad_data.read_squad_examples(path, is_training=False)) == 6


def test_no_answer_found_at_all_is_an_error(tmp_path):
  path = _squad_file(tmp_path, [_qa("absent", "dog", 4)])
  with pytest.raises(ValueError, match=r"no usable questions \(all 1 answers were not found"):
    squad_data.read_squad_examples(path, is_training=True)


def _predict_features(tmp_path, contexts):
  """Dev examples (one question each, ids q0, q1, ...) of `contexts` and their features."""
  path = tmp_path / "dev.json"
  path.write_text(json.dumps({"data": [{"title": "t", "paragraphs": [
      {"context": c, "qas": [{"id": f"q{i}", "question": "Who sat?", "answers": []}]}
      for i, c in enumerate(contexts)]}]}))
  examples = squad_data.read_squad_examples(str(path), is_training=False)
  features = []
  squad_data.convert_examples_to_features(examples, FullTokenizer(spm_model_file=SPM), 32, 8, 8,
                                     False, features.append, True)
  return examples, features


NO_SPAN = [{"text": "", "probability": 1.0, "start_log_prob": -1e6, "end_log_prob": -1e6}]


def test_contexts_without_windows_are_answered_empty_not_empty(tmp_path):
  # An empty or whitespace-only context gives no window; the original answered its nonce
  # "empty" there. A real context keeps its answer.
  examples, features = _predict_features(tmp_path, ["", " \n\t ", "The cat sat on the mat."])
  assert {f.example_index for f in features} == {2}
  feature = features[0]
  on = feature.tokens.index("▁on")
  logits = lambda k: [5.0 if i == k else 0.0 for i in range(32)]
  results = {feature.unique_id: {"start_log_prob": logits(on), "end_log_prob": logits(on + 1)}}
  predictions, nbest = squad_post.postprocess_v1(examples, features, results, 20, 30)
  assert predictions == {"q0": "", "q1": "", "q2": "on the"}
  assert nbest["q0"] == nbest["q1"] == NO_SPAN
  assert nbest["q2"][0]["text"] == "on the" and nbest["q2"][0]["start_log_prob"] == 5.0
  predictions, nbest, null_odds, _ = squad_post.postprocess_v2(examples[:2], [], {}, 20, 30, 5, 5)
  assert predictions == {"q0": "", "q1": ""} and nbest == {"q0": NO_SPAN, "q1": NO_SPAN}
  assert null_odds == {"q0": 1000000, "q1": 1000000}


def test_a_window_without_a_valid_span_is_answered_empty(tmp_path):
  # The rare case the original's nonce is for: every candidate fails the filters (here the only
  # start and end are on the final [SEP], outside the paragraph).
  examples, features = _predict_features(tmp_path, ["The cat sat on the mat."])
  [feature] = features
  last = len(feature.tokens) - 1
  logits = [5.0 if i == last else 0.0 for i in range(32)]
  results = {feature.unique_id: {"start_log_prob": logits, "end_log_prob": logits}}
  predictions, nbest = squad_post.postprocess_v1(examples, features, results, 1, 30)
  assert predictions == {"q0": ""} and nbest == {"q0": NO_SPAN}
