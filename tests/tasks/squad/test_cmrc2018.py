"""CMRC 2018 / WordPiece span QA: the features equal the official CMRC 2018 BERT baseline's, the
metric the official evaluator's (references made by tests/cmrc2018_reference.py running
ymcui/cmrc2018's own code on tests/testdata/cmrc2018), answers come back as the original
characters, the SavedModel tokenizes in the graph as the Python path, and run_squad_v1
--metric=cmrc2018 runs end to end."""

import json
import os

import pytest

from albert_tf.core import errors, settings
from albert_tf.tasks.squad import cmrc_metric, postprocess, wordpiece_data
from albert_tf.tokenization.cmrc import CmrcTokenizer, split_words
from albert_tf.tasks.squad import settings as squad_settings
from helpers import TESTDATA, run_binary

CMRC = os.path.join(TESTDATA, "cmrc2018")
VOCAB = os.path.join(CMRC, "vocab.txt")
SIZES = dict(max_seq_length=64, doc_stride=40, max_query_length=12)


def _json(name):
  with open(os.path.join(CMRC, name), encoding="utf-8") as f:
    return json.load(f)


def _features(split, do_lower_case):
  examples = wordpiece_data.read_examples(os.path.join(CMRC, f"{split}.json"), split == "train",
                                          do_lower_case)
  features = []
  wordpiece_data.convert_examples_to_features(
      examples, CmrcTokenizer(VOCAB, do_lower_case), SIZES["max_seq_length"],
      SIZES["doc_stride"], SIZES["max_query_length"], split == "train", features.append)
  return examples, features


@pytest.mark.parametrize("name,do_lower_case", [("features_lower.json", True),
                                                ("features_cased.json", False)])
@pytest.mark.parametrize("split", ["train", "dev"])
def test_features_equal_the_baseline(name, do_lower_case, split):
  reference = _json(name)
  assert reference["settings"] == dict(SIZES, do_lower_case=do_lower_case)
  examples, features = _features(split, do_lower_case)
  ref = reference[split]
  assert [(e.qas_id, e.doc_tokens, e.start_position, e.end_position) for e in examples] == [
      (e["qas_id"], e["doc_tokens"], e["start_position"], e["end_position"])
      for e in ref["examples"]]
  assert len(features) == len(ref["features"]) > len(examples)  # several windows each
  for ours, theirs in zip(features, ref["features"]):
    assert ours.unique_id == theirs["unique_id"]
    assert ours.doc_span_index == theirs["doc_span_index"]
    assert ours.tokens == theirs["tokens"]
    assert ours.input_ids == theirs["input_ids"]
    assert ours.input_mask == theirs["input_mask"]
    assert ours.segment_ids == theirs["segment_ids"]
    # Our p_mask (1 = not an answer position) is the baseline's input_span_mask inverted.
    assert ours.p_mask == [1 - m for m in theirs["input_span_mask"]]
    assert {str(k): v for k, v in ours.token_to_orig_map.items()} == theirs["token_to_orig_map"]
    assert ({str(k): v for k, v in ours.token_is_max_context.items()}
            == theirs["token_is_max_context"])
    assert (ours.start_position, ours.end_position) == (theirs["start_position"],
                                                        theirs["end_position"])
  if split == "train":  # windows without the answer are kept with start = end = 0
    positions = [(f.start_position, f.end_position) for f in features]
    assert (0, 0) in positions and any(s > 0 for s, _ in positions)
  else:
    assert any("[UNK]" in f.tokens for f in features)  # the vocabulary lacks a few characters


def test_tokenizer_rules():
  # CJK, punctuation and control characters (any C*, here Cf U+200B and Co U+E000) are words;
  # no accent stripping; str.lower(); whitespace (incl. U+3000) splits.
  assert split_words("Café中文,x\u200by\ue000z\u3000İ", True) == [
      "café", "中", "文", ",", "x", "\u200b", "y", "\ue000", "z", "i\u0307"]
  assert split_words("Café ÅB", False) == ["Café", "ÅB"]
  tokenizer = CmrcTokenizer(VOCAB, True)
  assert tokenizer.tokenize("BCPL\u200b语言") == ["bcp", "##l", "[UNK]", "语", "言"]


def test_whitespace_maps_to_the_previous_word():
  words, char_to_word, starts, ends = wordpiece_data.paragraph_words(" ab  c,d ", True, "x")
  assert words == ["ab", "c", ",", "d"]
  assert char_to_word == [-1, 0, 0, 0, 0, 1, 2, 3, 3]
  assert (starts, ends) == ([1, 5, 6, 7], [2, 5, 6, 7])
  with pytest.raises(errors.DataFormatError, match="U\\+2028"):
    wordpiece_data.paragraph_words("ab\u2028cd", True, "q1")


def _squad_file(tmp_path, context, answers, question="问?"):
  data = {"data": [{"paragraphs": [{"context": context, "qas": [
      {"id": "q1", "question": question, "answers": [
          {"text": t, "answer_start": s} for t, s in answers]}]}]}]}
  path = tmp_path / "train.json"
  path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
  return str(path)


def test_training_answer_is_the_first_occurrence_of_answers0(tmp_path):
  # answer_start points at the second "北京"; the baseline uses the text's first occurrence.
  path = _squad_file(tmp_path, "北京和北京", [("北京", 3), ("和", 2)])
  [example] = wordpiece_data.read_examples(path, True, True)
  assert (example.start_position, example.end_position) == (0, 1)
  path = _squad_file(tmp_path, "北京", [("上海", 0)])  # not in the context: skipped
  with pytest.raises(errors.DataFormatError, match="no usable questions"):
    wordpiece_data.read_examples(path, True, True)


def test_answers_are_original_characters():
  examples, features = _features("dev", True)
  index = next(i for i, e in enumerate(examples) if "martin" in e.doc_tokens)
  feature = next(f for f in features if f.example_index == index and "mar" in f.tokens
                 and f.token_is_max_context[f.tokens.index("mar")])
  start = feature.tokens.index("mar")  # "mar", "##t", "##i", "##n", "ric", ... "##s", "）"
  end = feature.tokens.index("）", start) - 1
  logits = lambda k: [10.0 if i == k else 0.0 for i in range(SIZES["max_seq_length"])]
  results = {f.unique_id: {"start_log_prob": [0.0] * 64, "end_log_prob": [0.0] * 64}
             for f in features}
  results[feature.unique_id] = {"start_log_prob": logits(start), "end_log_prob": logits(end)}
  predictions, _ = postprocess.postprocess_v1(examples, features, results, 20, 30)
  # Case and the space kept (the baseline's words are lower-cased and joined without it).
  assert predictions[examples[index].qas_id] == "Martin Richards"
  # Part of a word: a piece covers its own characters ("7094" is "7", "##0", "##9", "##4").
  word = examples[index].doc_tokens.index("7094")
  pieces, _, orig_to_tok, starts, ends = wordpiece_data.paragraph_pieces(
      examples[index], CmrcTokenizer(VOCAB, True))
  first = orig_to_tok[word]
  assert [examples[index].paragraph_text[s:e + 1] for s, e in
          zip(starts[first:first + 2], ends[first:first + 2])] == [
              p.lstrip("#") for p in pieces[first:first + 2]]


def test_an_empty_context_is_answered_empty(tmp_path):
  # No words, no window: "" (the baseline's nonce answer was "empty").
  path = tmp_path / "dev.json"
  path.write_text(json.dumps({"data": [{"paragraphs": [
      {"context": c, "qas": [{"id": f"q{i}", "question": "谁?", "answers": []}]}
      for i, c in enumerate(["", "　 \n"])]}]}, ensure_ascii=False), encoding="utf-8")
  examples = wordpiece_data.read_examples(str(path), False, True)
  features = []
  wordpiece_data.convert_examples_to_features(
      examples, CmrcTokenizer(VOCAB, True), SIZES["max_seq_length"], SIZES["doc_stride"],
      SIZES["max_query_length"], False, features.append)
  assert features == []
  predictions, nbest = postprocess.postprocess_v1(examples, features, {}, 20, 30)
  assert predictions == {"q0": "", "q1": ""}
  assert nbest["q0"] == [{"text": "", "probability": 1.0, "start_log_prob": -1e6,
                          "end_log_prob": -1e6}]


@pytest.fixture
def treebank_only(monkeypatch):
  """nltk without its punkt data, as here and for many users."""
  nltk = pytest.importorskip("nltk")
  plain = nltk.word_tokenize

  def without_punkt(text, language="english", preserve_line=False):
    if not preserve_line:
      raise LookupError("punkt_tab not found")
    return plain(text, language, preserve_line=True)
  monkeypatch.setattr(nltk, "word_tokenize", without_punkt)
  monkeypatch.setattr(cmrc_metric, "_word_tokenize", None)


def test_metric_equals_the_official_evaluator(treebank_only):
  reference = _json("evaluation.json")
  dev, predictions = _json("dev.json")["data"], _json("predictions.json")
  metrics = cmrc_metric.evaluate(dev, predictions)
  assert metrics == {"exact_match": reference["exact_match"], "f1": reference["f1"]}
  assert reference["skip"] == 1 and 0 < reference["f1"] < 100
  answers = {qa["id"]: [a["text"] for a in qa["answers"]]
             for a in dev for p in a["paragraphs"] for qa in p["qas"]}
  for qid, expected in reference["per_question"].items():
    assert cmrc_metric.f1(answers[qid], predictions[qid]) == expected["f1"], qid
    assert cmrc_metric.exact_match(answers[qid], predictions[qid]) == expected["em"], qid
  # The Treebank tokenizer keeps "U.S." and "Army." whole where punkt would split "Army" "."
  assert cmrc_metric.segments("u.s. army. then more") == ["u.s.", "army.", "then", "more"]


def test_in_graph_tokenizer_equals_python():
  tf = pytest.importorskip("tensorflow")
  from albert_tf.tasks.squad.export import wordpiece_paragraph
  from albert_tf.tokenization.in_graph_cmrc import CmrcInGraphTokenizer
  contexts, questions = [], []
  for split in ("train", "dev"):
    for article in _json(f"{split}.json")["data"]:
      for p in article["paragraphs"]:
        contexts.append(p["context"])
        questions += [q["question"] for q in p["qas"]]
  tricky = ["a\u200bb Café ÅB\u00a0x\tY\u3000中文,ok İstanbul \x01z", "", "ΑΣ Σ 7094"]
  for do_lower_case in (True, False):
    python = CmrcTokenizer(VOCAB, do_lower_case)
    graph = CmrcInGraphTokenizer(VOCAB, do_lower_case)
    texts = contexts + questions + tricky
    ids = graph.ids(tf.constant(texts)).to_list()
    assert ids == [python.convert_tokens_to_ids(python.tokenize(t)) for t in texts]
    graph_ids, first, last = wordpiece_paragraph(graph, tf.constant(contexts + tricky[:1]))
    for i, context in enumerate(contexts + tricky[:1]):
      words, _, starts, ends = wordpiece_data.paragraph_words(context, do_lower_case, "x")
      example = wordpiece_data.WordExample("x", "", context, doc_tokens=words,
                                           word_starts=starts, word_ends=ends)
      pieces, _, _, piece_starts, piece_ends = wordpiece_data.paragraph_pieces(example, python)
      assert graph_ids[i].numpy().tolist() == python.convert_tokens_to_ids(pieces)
      assert first[i].numpy().tolist() == piece_starts
      assert last[i].numpy().tolist() == piece_ends


def test_serving_windows_equal_the_features():
  """The raw-text signature's windows (run eagerly) are the binary's dev features."""
  tf = pytest.importorskip("tensorflow")
  import albert_tf
  from albert_tf.tasks.squad.export import SquadServingModule
  from albert_tf.tokenization.in_graph_cmrc import CmrcInGraphTokenizer
  config = albert_tf.AlbertConfig.from_json_file(os.path.join(CMRC, "albert_config_tiny.json"))
  module = SquadServingModule(albert_tf.AlbertSpanLabeler(config),
                              settings.TokenizerSettings(vocab_file=VOCAB),
                              SIZES["max_seq_length"], SIZES["doc_stride"],
                              SIZES["max_query_length"])
  assert isinstance(module.tokenizer, CmrcInGraphTokenizer)
  examples, features = _features("dev", True)
  inputs, _, _, _ = module._windows(
      tf.constant([e.question_text for e in examples]),
      tf.constant([e.paragraph_text for e in examples]))
  for name in ("input_ids", "input_mask", "segment_ids", "p_mask"):
    assert inputs[name].numpy().tolist() == [getattr(f, name) for f in features], name


def test_cmrc2018_metric_is_run_squad_v1s(tmp_path):
  from albert_tf.tasks.squad.job import SquadJob
  job_settings = squad_settings.SquadSettings(
      output_dir=str(tmp_path), model=settings.ModelSettings(), v2=True, metric="cmrc2018",
      do_predict=True, predict_file=os.path.join(CMRC, "dev.json"))
  with pytest.raises(errors.UsageError, match="run_squad_v1's"):
    SquadJob(job_settings)


@pytest.mark.slow
def test_run_squad_v1_cmrc2018_end_to_end(tmp_path):
  out = tmp_path / "out"
  run_binary("run_squad_v1", [
      f"--vocab_file={VOCAB}",
      f"--albert_config_file={os.path.join(CMRC, 'albert_config_tiny.json')}",
      f"--train_file={os.path.join(CMRC, 'train.json')}",
      f"--predict_file={os.path.join(CMRC, 'dev.json')}", f"--output_dir={out}",
      "--metric=cmrc2018", "--do_train", "--do_predict",
      "--max_seq_length=64", "--doc_stride=40", "--max_query_length=12",
      "--train_batch_size=4", "--num_train_epochs=2", "--save_checkpoints_steps=2",
      "--learning_rate=3e-3", "--random_seed=1", "--data_seed=2"], timeout=600)
  with open(out / "predictions.json", encoding="utf-8") as f:
    text = f.read()
  predictions = json.loads(text)
  assert "\\u" not in text  # written readable, as the baseline
  dev = _json("dev.json")["data"]
  qas = [(qa["id"], qa["question"], p["context"]) for a in dev for p in a["paragraphs"]
         for qa in p["qas"]]
  assert list(predictions) == [q[0] for q in qas]
  assert all(p and p in c for p, (_, _, c) in zip(predictions.values(), qas))
  # eval_results.txt: exact_match and f1 (percent) at each checkpoint; the best's are the
  # evaluator's on predictions.json (nltk with or without punkt, as the binary found it).
  blocks = [dict(line.split(" = ") for line in block.strip().splitlines())
            for block in (out / "eval_results.txt").read_text().split("=" * 50) if block.strip()]
  assert [b["global_step"] for b in blocks] == ["2", "4"]
  best = max(blocks, key=lambda b: float(b["f1"]))
  expected = cmrc_metric.evaluate(dev, predictions)
  assert float(best["f1"]) == pytest.approx(expected["f1"], abs=1e-9)
  assert float(best["exact_match"]) == pytest.approx(expected["exact_match"], abs=1e-9)
