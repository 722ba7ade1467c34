"""Character-level NER (Chinese): one character a line with a WordPiece vocab.txt, and --char_level
splitting a word-a-line file's CJK words into characters with their tags spread; run_ner trains,
predicts and scores per character (as seqeval: albert_tf.tasks.ner.metrics, checked in
tests/tasks/ner/test_ner_data.py), and its SavedModel tags raw Chinese text per character."""

import os

import pytest

from albert_tf.finetuning import feature_cache
from albert_tf.core.settings import TokenizerSettings
from albert_tf.tasks.ner import data, features
from albert_tf.tasks.ner.metrics import entity_metrics, get_entities
from albert_tf.tokenization import FullTokenizer

from helpers import TESTDATA, run_binary

ZH = os.path.join(TESTDATA, "zh")
CHARS = os.path.join(ZH, "ner")        # one character a line
WORDS = os.path.join(ZH, "ner_words")  # the same sentences, one word a line
VOCAB = os.path.join(ZH, "vocab.txt")
TINY = os.path.join(TESTDATA, "ner", "albert_config_tiny.json")


def _rows(sentences):
  return [(s.words, s.tags) for s in sentences]


def test_split_word_isolates_cjk_characters_and_keeps_other_runs():
  assert data.split_word("北京大学") == ["北", "京", "大", "学"]
  assert data.split_word("iPhone手机") == ["iPhone", "手", "机"]
  assert data.split_word("2008年8月") == ["2008", "年", "8", "月"]
  assert data.split_word("Paris") == ["Paris"]
  assert data.split_word("，") == ["，"]  # CJK punctuation is not a CJK character: one word


@pytest.mark.parametrize("tag,parts,expected", [
    ("O", 3, ["O", "O", "O"]),
    ("B-ORG", 4, ["B-ORG", "I-ORG", "I-ORG", "I-ORG"]),
    ("I-ORG", 2, ["I-ORG", "I-ORG"]),  # inside an entity that began on an earlier word
    ("E-LOC", 3, ["I-LOC", "I-LOC", "E-LOC"]),
    ("S-PER", 2, ["B-PER", "E-PER"]),
    ("S-PER", 3, ["B-PER", "I-PER", "E-PER"]),
    ("S-PER", 1, ["S-PER"]),
    ("PER", 2, None),  # an IO scheme's bare type: refused
    ("M-PER", 2, None),
])
def test_split_tag(tag, parts, expected):
  assert data.split_tag(tag, parts) == expected


def test_split_tags_keep_each_entity_as_seqeval_reads_it():
  """The entities of the word-level tags, in characters, are those seqeval finds in the split
  tags (IOB2 and IOBES sentences; get_entities is seqeval's reading,
  tests/tasks/ner/test_ner_data.py)."""
  words = ["张伟", "在", "上海", "交通大学", "读书"]
  for tags in (["B-PER", "O", "B-ORG", "I-ORG", "O"], ["S-PER", "O", "B-ORG", "E-ORG", "O"]):
    sentence = data.Sentence(tuple(words), tuple(tags), 1)
    [split] = data.char_level([sentence], "x.txt")
    assert split.words == tuple("张伟在上海交通大学读书")
    assert sorted(get_entities(list(split.tags))) == [
        ("ORG", 3, 8), ("PER", 0, 1)]


def test_word_file_at_char_level_equals_the_character_file():
  for split in ("train", "dev", "test"):
    chars = data.read_split(CHARS, split)
    assert _rows(data.read_split(WORDS, split, char_level_words=True)) == _rows(chars)
    # A character file reads the same with --char_level.
    assert _rows(data.read_split(CHARS, split, char_level_words=True)) == _rows(chars)
  assert len(data.read_split(CHARS, "train")) == 30


def test_char_level_errors_name_the_words_line(tmp_path):
  path = tmp_path / "train.txt"
  path.write_text("我 O\n去 O\n\n张伟 O\n北京 LOC\n", encoding="utf-8")
  with pytest.raises(data.NerDataError, match=r"train.txt:5: --char_level cannot split the tag "
                                              r"'LOC' of '北京' over its 2 parts"):
    data.char_level(data.read_conll(str(path)), str(path))
  path.write_text("张伟 B-PER\n去 O\n北京 B-XX\n", encoding="utf-8")
  sentences = data.char_level(data.read_conll(str(path)), str(path))
  with pytest.raises(data.NerDataError, match=r"train.txt:3: tag 'B-XX' is not in the label"):
    data.check_tags(sentences, ["O", "B-PER", "I-PER"], str(path))


def test_each_character_is_one_wordpiece_labelled_on_itself():
  tokenizer = FullTokenizer(vocab_file=VOCAB, do_lower_case=True)
  sentence = data.read_split(CHARS, "train")[0]
  labels = data.labels_of(data.read_split(CHARS, "train"))
  [feature] = features.sentence_features(tokenizer, sentence, labels, 32, 16)
  n = len(sentence.words)
  expected = tokenizer.convert_tokens_to_ids(["[CLS]", *sentence.words, "[SEP]"])
  assert (feature["input_ids"][:n + 2] == expected
          and "[UNK]" not in tokenizer.convert_ids_to_tokens(expected))
  assert feature["word_index"][1:n + 1] == list(range(n))
  assert feature["label_ids"][1:n + 1] == [labels.index(t) for t in sentence.tags]
  assert sum(feature["label_weights"]) == n


def test_char_level_changes_the_cached_features_stamp():
  tokenizer = TokenizerSettings(vocab_file=VOCAB)
  path = data.split_file(WORDS, "train")
  words, chars = (feature_cache.make_stamp(tokenizer, max_seq_length=32, **features.cache_inputs(
      path, ["O"], 16, char_level=char_level)) for char_level in (False, True))
  assert feature_cache.differences(words, chars) == ["char_level: false -> true"]


def _predictions(path):
  """[[(word, gold, predicted)]] of a <split>_predictions.txt."""
  return [[tuple(line.split(" ")) for line in block.splitlines()]
          for block in open(path, encoding="utf-8").read().split("\n\n") if block.strip()]


def _results(path):
  """The last evaluation of eval_results.txt (or test_results.txt), {key: value}."""
  blocks = open(path, encoding="utf-8").read().strip().split("=" * 50)
  block = [b for b in blocks if b.strip()][-1]
  return {k: v for k, v in (line.split(" = ") for line in block.strip().splitlines())}


@pytest.mark.slow
def test_run_ner_at_char_level_scores_and_serves_characters(tmp_path):
  """run_ner --char_level on the word-a-line fixture with the Chinese vocab.txt: predictions per
  character, F1 equal to seqeval's, and the SavedModel tags unspaced Chinese text as
  test_predictions.txt does. 40 s on 2 idle cores (the export 10 s of it)."""
  import tensorflow as tf
  import tensorflow_text  # noqa: F401 -- registers the text ops a SavedModel needs
  out = tmp_path / "out"
  run_binary("run_ner", [
      f"--data_dir={WORDS}", "--char_level", f"--vocab_file={VOCAB}",
      f"--albert_config_file={TINY}", f"--output_dir={out}", "--do_train", "--do_eval",
      "--do_predict", "--max_seq_length=32", "--train_batch_size=16", "--learning_rate=3e-3",
      "--train_step=30", "--warmup_step=3", "--save_checkpoints_steps=30",
      "--eval_batch_size=32", "--predict_batch_size=32", "--random_seed=1", "--data_seed=1",
      f"--export_dir={tmp_path / 'export'}"])
  test = data.read_split(CHARS, "test")
  predicted = _predictions(out / "test_predictions.txt")
  assert [[(w, g) for w, g, _ in s] for s in predicted] == [list(zip(s.words, s.tags))
                                                            for s in test]
  gold, tags = [[g for _, g, _ in s] for s in predicted], [[p for _, _, p in s] for s in predicted]
  assert float(_results(out / "test_results.txt")["f1"]) == pytest.approx(
      entity_metrics(gold, tags)["f1"], abs=1e-12)
  dev = _predictions(out / "dev_predictions.txt")
  dev_f1 = entity_metrics([[g for _, g, _ in s] for s in dev],
                          [[p for _, _, p in s] for s in dev])["f1"]
  evaluation = _results(out / "eval_results.txt")
  assert float(evaluation["f1"]) == pytest.approx(dev_f1, abs=1e-12)
  # Measured: dev F1 0.0 untrained, 0.35 after 30 steps (CPU, 2 cores).
  assert int(evaluation["global_step"]) == 30 and dev_f1 > 0.2
  assert "I-ORG" in open(out / "label_list.txt", encoding="utf-8").read().split()

  [version] = os.listdir(tmp_path / "export")
  loaded = tf.saved_model.load(str(tmp_path / "export" / version))
  assert bool(loaded.signatures["tokenization_info"]()["char_level"])
  served = loaded.signatures["serving_default"](
      text=tf.constant(["".join(s.words) for s in test] + ["他用iPhone手机"]))
  counts = served["word_count"].numpy().tolist()
  assert counts == [len(s.words) for s in test] + [5]  # 他 用 iPhone 手 机
  labels = [[label.decode() for label in row[:count]]
            for row, count in zip(served["labels"].numpy(), counts)]
  assert labels[:-1] == tags
