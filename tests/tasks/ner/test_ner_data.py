"""NER data and features: CoNLL reading (every split name, tag scheme and error), the label list,
windows with one prediction per word, and the entity metric against seqeval's (its outputs stored
by tests/seqeval_reference.py)."""

import json
import os

import pytest

from albert_tf.checkpoints.labels import write_label_file
from albert_tf.tasks.ner import data, features, labels
from albert_tf.tasks.ner.metrics import entity_metrics, get_entities
from albert_tf.tokenization import FullTokenizer

from helpers import TESTDATA

NER = os.path.join(TESTDATA, "ner")
SPM = os.path.join(TESTDATA, "original_pretraining_data", "30k-clean-tiny.model")


def _write(tmp_path, name, text):
  path = tmp_path / name
  path.write_text(text)
  return str(path)


# ---- reading ---------------------------------------------------------------------------------
def test_fixture_splits_read_with_docstart_skipped():
  counts = {split: len(data.read_split(NER, split)) for split in data.SPLIT_FILES}
  assert counts == {"train": 400, "dev": 80, "test": 80}
  train = data.read_split(NER, "train")
  assert all("-DOCSTART-" not in s.words for s in train)
  assert train[0].words[:4] == ("Called", "to", "implement", "Wisbex")
  assert train[0].tags[3:5] == ("B-ORG", "I-ORG") and train[0].line == 3
  # O first, then sorted (the fixture's MISC entities are one word: no I-MISC).
  assert data.labels_of(train) == ["O", "B-LOC", "B-MISC", "B-ORG", "B-PER", "I-LOC", "I-ORG",
                                   "I-PER"]


def test_conll2003_names_tag_schemes_and_untagged_test(tmp_path):
  # IOB1 (I- opens an entity), IOBES, tabs, \r\n, several blank lines, the tag last of 2 columns.
  _write(tmp_path, "eng.train", "-DOCSTART- -X- O\n\nEU\tNNP I-ORG\r\nrejects x O\n\n\n"
         "S-PER\n")  # a word that looks like a tag but has none: an error below
  with pytest.raises(data.NerDataError, match=r"eng\.train:7: .*no tag"):
    data.read_split(str(tmp_path), "train")
  _write(tmp_path, "eng.train", "Peter S-PER\nin O\nNew B-LOC\nYork E-LOC\n\nEU I-ORG\n")
  train = data.read_split(str(tmp_path), "train")
  assert [s.tags for s in train] == [("S-PER", "O", "B-LOC", "E-LOC"), ("I-ORG",)]
  assert data.labels_of(train) == ["O", "B-LOC", "E-LOC", "I-ORG", "S-PER"]
  _write(tmp_path, "eng.testb", "Peter\nruns\n\nhome\n")
  test = data.read_split(str(tmp_path), "test")
  assert [s.words for s in test] == [("Peter", "runs"), ("home",)] and test[0].tags is None


def test_bad_input_names_file_and_line(tmp_path):
  path = _write(tmp_path, "train.txt", "a O\nb B-PER\n\nc B-LOC\n")
  sentences = data.read_conll(path)
  with pytest.raises(data.NerDataError, match=r"train\.txt:4: tag 'B-LOC' is not in the label"):
    data.check_tags(sentences, ["O", "B-PER"], path)
  _write(tmp_path, "dev.txt", "-DOCSTART- -X- O\n\n\n")
  with pytest.raises(data.NerDataError, match=r"dev\.txt: no sentence"):
    data.read_split(str(tmp_path), "dev")
  _write(tmp_path, "dev.txt", "a\nb\n")  # dev needs tags
  with pytest.raises(data.NerDataError, match=r"dev\.txt:1: line 'a' has no tag"):
    data.read_split(str(tmp_path), "dev")
  with pytest.raises(data.NerDataError, match="no test file .*test.txt or eng.testb"):
    data.split_file(str(tmp_path), "test")
  with pytest.raises(data.NerDataError, match="distinct"):
    data.parse_label_list("O,O")


def test_label_sources_in_order(tmp_path):
  train = data.read_conll(_write(tmp_path, "t.txt", "a B-X\nb O\n"))
  assert labels.resolve_labels("O,B-X,I-X", None, None, train)[0] == ["O", "B-X", "I-X"]
  assert labels.resolve_labels(None, str(tmp_path), None, train)[0] == ["O", "B-X"]
  write_label_file(str(tmp_path), ["O", "B-Y"])
  assert labels.resolve_labels(None, str(tmp_path), None, train)[0] == ["O", "B-Y"]
  hf_dir = os.path.join(TESTDATA, "hf_albert_tagging", "token_classifier")
  assert labels.resolve_labels(None, None, hf_dir, None)[0][:3] == ["O", "B-PER", "I-PER"]
  with pytest.raises(data.NerDataError, match="no label list"):
    labels.resolve_labels(None, None, None, None)


# ---- features --------------------------------------------------------------------------------
class _Pieces:
  """A tokenizer stand-in: a word's pieces are its characters; "" gives none."""
  sp_model = object()

  def tokenize(self, word):
    return [] if word == "@" else list(word)

  def convert_tokens_to_ids(self, tokens):
    return [len(t) for t in tokens]


def test_windows_predict_every_word_once_on_its_first_piece():
  words = tuple(f"w{i}" + "x" * (i % 3) for i in range(40)) + ("@",)
  sentence = data.Sentence(words, tuple("B-A" if i % 5 == 0 else "O" for i in range(41)), 1)
  feats = features.sentence_features(_Pieces(), sentence, ["O", "B-A"], 16, 5)
  assert len(feats) > 10
  seen = {}
  for f in feats:
    assert len(f["input_ids"]) == 16 and set(f["segment_ids"]) == {0}
    for column, w in enumerate(f["word_index"]):
      if w >= 0:
        assert w not in seen
        seen[w] = f
        assert f["label_weights"][column] == 1
        assert f["label_ids"][column] == (1 if w % 5 == 0 else 0)
  assert sorted(seen) == list(range(41))
  assert all(f["label_weights"][0] == 0 and sum(f["label_weights"]) == sum(
      w >= 0 for w in f["word_index"]) for f in feats)
  assert features.word_pieces(_Pieces(), ["@"]) == [["<unk>"]]


def test_real_tokenizer_long_fixture_sentence(tmp_path):
  tokenizer = FullTokenizer(spm_model_file=SPM)
  sentence = data.read_split(NER, "test")[0]
  assert len(sentence.words) > 120
  path = str(tmp_path / "f.tf_record")
  count = features.write_features([sentence], tokenizer, ["O", "B-PER"], 32, 8, path)
  assert count > 5
  feats = features.sentence_features(tokenizer, sentence, ["O"], 32, 8)
  predicted = sorted(w for f in feats for w in f["word_index"] if w >= 0)
  assert predicted == list(range(len(sentence.words)))
  assert features.unk_piece(tokenizer) == "<unk>"


# ---- metrics ---------------------------------------------------------------------------------
def _seqeval_reference():
  with open(os.path.join(NER, "seqeval_reference.json"), encoding="utf-8") as f:
    return json.load(f)


def test_entities_equal_seqeval_on_adversarial_tags():
  """seqeval 1.2.2's chunks of 2,000 random sequences mixing IOB1, IOB2 and IOBES."""
  reference = _seqeval_reference()
  assert reference["seqeval"] == "1.2.2" and len(reference["entities"]) == 2000
  for case in reference["entities"]:
    assert get_entities(case["tags"]) == [tuple(e) for e in case["entities"]], case["tags"]


def test_scores_equal_seqeval():
  """Micro and per-type precision, recall, F1 and accuracy as seqeval's, exactly: hand-made
  sentences (I- after O, I- of another type, IOB1, IOBES, E- alone, no entity), random sets and
  the fixture's dev tags perturbed."""
  reference = _seqeval_reference()["scores"]
  assert len(reference) == 52
  for case in reference:
    ours = entity_metrics(case["gold"], case["predicted"])
    assert set(ours) == set(case["scores"])
    for key, value in case["scores"].items():
      assert ours[key] == pytest.approx(value, abs=1e-12), key
  # The last set is ner/dev.txt's tags as the fixture holds them now.
  dev = data.read_split(NER, "dev")
  assert reference[-1]["gold"] == [list(s.tags) for s in dev]
  assert entity_metrics(reference[-1]["gold"], reference[-1]["gold"])["f1"] == 1.0
