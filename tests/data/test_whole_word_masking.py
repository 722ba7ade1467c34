"""Whole-word masking in create_pretraining_data: with a fixed seed, masked positions cover whole
words (WordPiece's ## rule, as BERT's create_pretraining_data; jieba's Chinese words), n-grams
are runs of whole words, masked-LM labels are the plain characters' ids, the jieba marking
agrees with an independent re-statement of brightmart/albert_zh's get_new_segment (except where
documented), and --whole_word_mask / --do_whole_word_mask are one setting.

The default's records staying byte-identical is test_create_pretraining_data's fixture tests."""

import os
import re
import subprocess
import sys

import pytest

from albert_tf import create_pretraining_data as binary
from albert_tf.core import errors
from albert_tf.core.settings import TokenizerSettings
from albert_tf.data.instances import InstanceOptions
from albert_tf.data.pretraining_data import GenerationSettings, check_settings, generate
from albert_tf.tokenization import FullTokenizer
from albert_tf.tokenization import chinese_words
from helpers import REPO_ROOT, TESTDATA
from tfrecord_utils import read_examples

jieba = pytest.importorskip("jieba")

ZH = os.path.join(TESTDATA, "zh")
ZH_VOCAB, ZH_CORPUS = os.path.join(ZH, "vocab.txt"), os.path.join(ZH, "corpus.txt")
EN = os.path.join(TESTDATA, "original_wordpiece")
EN_VOCAB, EN_CORPUS = os.path.join(EN, "vocab.txt"), os.path.join(EN, "corpus.txt")
CJK = re.compile("[\u4e00-\u9fa5]")  # get_new_segment's test for a Chinese piece


@pytest.fixture(scope="module", autouse=True)
def jieba_cache(tmp_path_factory):
  """jieba's dictionary cache in a temporary XDG_CACHE_HOME, not the user's."""
  cache = tmp_path_factory.mktemp("xdg_cache")
  before = os.environ.get("XDG_CACHE_HOME")
  os.environ["XDG_CACHE_HOME"] = str(cache)
  jieba.dt.tmp_dir = str(cache)  # the reference's own (module-level) jieba too
  yield cache
  if before is None:
    del os.environ["XDG_CACHE_HOME"]
  else:
    os.environ["XDG_CACHE_HOME"] = before


def _lcut(text):
  """jieba's default segmentation, through its module-level tokenizer (not ours)."""
  return jieba.lcut(text)


def get_new_segment(pieces):
  """brightmart/albert_zh's get_new_segment, restated: True where it prefixes "##". It cuts the
  joined pieces with jieba and, from each Chinese piece, takes the longest run of 3, 2 or 1
  pieces that is one of the line's words."""
  words = set(_lcut("".join(pieces)))
  marks, i = [], 0
  while i < len(pieces):
    if not CJK.search(pieces[i]):
      marks.append(False)
      i += 1
      continue
    for n in (3, 2, 1):
      if i + n <= len(pieces) and "".join(pieces[i:i + n]) in words:
        marks += [False] + [True] * (n - 1)
        i += n
        break
    else:
      marks.append(False)
      i += 1
  return marks


def _jieba_later_chars(pieces):
  """The test's own marking by jieba's word spans: a single-CJK-character piece after another
  in the same word."""
  marks, offset, previous = [], 0, None
  word_of = [k for k, w in enumerate(_lcut("".join(pieces))) for _ in w]
  for piece in pieces:
    here = word_of[offset] if len(piece) == 1 and CJK.match(piece) else None
    marks.append(here is not None and here == previous)
    previous, offset = here, offset + len(piece)
  return marks


def _settings(vocab, **kw):
  instance = {k: kw.pop(k) for k in list(kw) if k in InstanceOptions.__dataclass_fields__}
  return GenerationSettings(
      tokenizer=TokenizerSettings(vocab_file=vocab), dupe_factor=kw.pop("dupe_factor", 3),
      random_seed=kw.pop("random_seed", 7), instance=InstanceOptions(
          **dict(dict(max_seq_length=48, max_predictions_per_seq=8), **instance)), **kw)


def _records(tmp_path, corpus, settings, name="out.tfrecord"):
  generate([corpus], [str(tmp_path / name)], settings)
  return read_examples(str(tmp_path / name))


def _documents(corpus, tokenizer, later):
  """Each document's pieces with their expected start flags, as one string per document of
  `piece\\x01flag\\x02` items (to find a record's segments in by substring)."""
  documents, current = [], []
  for line in open(corpus, encoding="utf-8").read().split("\n") + [""]:
    pieces = tokenizer.tokenize(line) if line.strip() else []
    if pieces:
      marks = later(pieces)
      current += [f"{p}\x01{0 if m else 1}\x02" for p, m in zip(pieces, marks)]
    elif current:
      documents.append("".join(current))
      current = []
  return documents


def _check_whole_words(records, tokenizer, documents):
  """Asserts that each record's pieces (masks undone) and token_boundary are stretches of the
  corpus with the expected word starts, and that its masked positions cover whole words.
  Returns (multi-piece words masked, masked runs of several words)."""
  multi_piece = multi_word = 0
  for record in records:
    n = sum(record["input_mask"])
    ids = record["input_ids"][:n]
    masked = dict(zip(record["masked_lm_positions"], record["masked_lm_ids"]))
    masked = {p: i for p, i in masked.items() if i or p}  # drop the padding (0, 0)
    original = [masked.get(k, ids[k]) for k in range(n)]
    pieces = tokenizer.convert_ids_to_tokens(original)
    boundary = record["token_boundary"][:n]
    # Segments between [CLS]/[SEP]: each a stretch of one document, with its starts.
    words, segment = [], []
    for k, piece in enumerate(pieces + ["[SEP]"]):
      if piece in ("[CLS]", "[SEP]"):
        text = "".join(f"{pieces[j]}\x01{boundary[j]}\x02" for j in segment)
        assert not segment or any(text in d for d in documents), (pieces, boundary)
        segment = []
        continue
      segment.append(k)
      if boundary[k] or not words:
        words.append([k])
      else:
        words[-1].append(k)
    for word in words:
      covered = [k in masked for k in word]
      assert all(covered) or not any(covered), ([pieces[k] for k in word], covered)
      multi_piece += len(word) > 1 and all(covered)
    multi_word += sum(1 for a, b in zip(words, words[1:])
                      if a[-1] in masked and b[0] in masked and b[0] == a[-1] + 1)
  return multi_piece, multi_word


def test_wordpiece_masks_whole_words_and_ngrams_of_them(tmp_path):
  """English WordPiece: a word and its ## pieces are masked together (BERT's rule), and n-grams
  (ALBERT's default --ngram=3) mask runs of several whole words."""
  tokenizer = FullTokenizer(vocab_file=EN_VOCAB)
  corpus = tmp_path / "corpus.txt"  # the fixture's first 1,000 lines
  corpus.write_text("\n".join(open(EN_CORPUS, encoding="utf-8").read().split("\n")[:1000]),
                    encoding="utf-8")
  records = _records(tmp_path, corpus, _settings(EN_VOCAB, dupe_factor=1))
  documents = _documents(corpus, tokenizer, lambda pieces: [p.startswith("##") for p in pieces])
  multi_piece, multi_word = _check_whole_words(records, tokenizer, documents)
  assert len(records) > 300 and multi_piece > 50 and multi_word > 50, (
      len(records), multi_piece, multi_word)
  # Without whole-word masking some words are masked in part: the check above can fail.
  split = _records(tmp_path, corpus, _settings(EN_VOCAB, dupe_factor=1,
                                               do_whole_word_mask=False), "per_piece")
  with pytest.raises(AssertionError):
    _check_whole_words(split, tokenizer, documents)


def test_jieba_masks_whole_chinese_words_with_plain_character_ids(tmp_path):
  tokenizer = FullTokenizer(vocab_file=ZH_VOCAB)
  settings = _settings(ZH_VOCAB, dupe_factor=5, chinese_word_segmentation="jieba")
  records = _records(tmp_path, ZH_CORPUS, settings)
  documents = _documents(ZH_CORPUS, tokenizer,
                         lambda p: [a or b.startswith("##") for a, b in
                                    zip(_jieba_later_chars(p), p)])
  multi_piece, multi_word = _check_whole_words(records, tokenizer, documents)
  assert len(records) > 30 and multi_piece > 30 and multi_word > 5, (
      len(records), multi_piece, multi_word)
  # Labels and unmasked inputs are the plain characters' ids: the vocab's "##中"-style entries (as
  # in Google's Chinese vocab.txt) never appear.
  continuation_ids = {i for t, i in tokenizer.vocab.items() if t.startswith("##") and
                      CJK.match(t[2:])}
  assert len(continuation_ids) > 100
  for r in records:
    assert not set(r["masked_lm_ids"]) & continuation_ids
    positions = set(r["masked_lm_positions"])
    unmasked = {i for k, i in enumerate(r["input_ids"]) if k not in positions}
    assert not unmasked & continuation_ids  # (a masked position may hold a random id)
  # Deterministic given the seed; another seed masks otherwise.
  assert _records(tmp_path, ZH_CORPUS, settings, "again") == records
  other = _settings(ZH_VOCAB, dupe_factor=5, chinese_word_segmentation="jieba", random_seed=8)
  assert _records(tmp_path, ZH_CORPUS, other, "other") != records


def test_jieba_marking_against_get_new_segment():
  """Equal to get_new_segment's ## marks except inside jieba words longer than 3 characters,
  which we join whole and it leaves as separate characters (it matches at most 3 pieces, and a
  long word's prefixes are not words of the line)."""
  tokenizer = FullTokenizer(vocab_file=ZH_VOCAB)
  segment = chinese_words.JiebaSegmenter()
  long_words = []
  for line in open(ZH_CORPUS, encoding="utf-8"):
    pieces = tokenizer.tokenize(line)
    if not pieces:
      continue
    ours = chinese_words.continuation_flags(pieces, segment("".join(pieces)))
    theirs = get_new_segment(pieces)
    assert ours == _jieba_later_chars(pieces)
    in_long_word, offset = [], 0
    for word in _lcut("".join(pieces)):
      in_long_word += [len(word) > 3] * len(word)
    for k, piece in enumerate(pieces):
      inside = in_long_word[offset]
      offset += len(piece)
      if inside:
        assert not theirs[k], (line, piece)
      else:
        assert ours[k] == theirs[k], (line, piece)
    long_words += [w for w in _lcut("".join(pieces)) if len(w) > 3 and CJK.match(w)]
  assert long_words == ["人工智能", "人工智能", "北京大学", "自然语言", "中华人民共和国",
                        "一九四九年", "开会讨论"]


def test_continuation_flags_rules():
  pieces = ["我", "用", "ip", "##hone", "手", "机", "[UNK]", "北", "京"]
  words = ["我用", "ip##hone", "手机", "[UNK]", "北京"]
  # English pieces are left to the ## rule; [UNK] and non-CJK pieces break a word.
  assert chinese_words.continuation_flags(pieces, words) == [
      False, True, False, False, False, True, False, False, True]
  with pytest.raises(ValueError, match="does not spell"):
    chinese_words.continuation_flags(["北", "京"], ["北"])


def test_jieba_cache_goes_to_xdg_cache_home(jieba_cache):
  segment = chinese_words.JiebaSegmenter()
  assert segment.cache_dir == str(jieba_cache / "albert_tf")
  assert segment("北京大学") == ["北京大学"]
  assert os.listdir(jieba_cache / "albert_tf") == ["jieba.cache"]


def test_refusals():
  spm = _settings(ZH_VOCAB, chinese_word_segmentation="jieba")
  spm.tokenizer = TokenizerSettings(
      vocab_file=ZH_VOCAB,
      spm_model_file=os.path.join(TESTDATA, "original_pretraining_data", "30k-clean-tiny.model"))
  with pytest.raises(errors.UsageError, match="WordPiece vocabularies"):
    check_settings(spm)
  with pytest.raises(errors.UsageError, match="needs|joins characters into words"):
    check_settings(_settings(ZH_VOCAB, chinese_word_segmentation="jieba",
                             do_whole_word_mask=False))
  with pytest.raises(errors.UsageError, match="the choices are jieba"):
    check_settings(_settings(ZH_VOCAB, chinese_word_segmentation="ltp"))


def _whole_word_mask(argv):
  binary.FLAGS(["create_pretraining_data", "--input_file=x", "--output_file=y", *argv])
  try:
    return binary.whole_word_mask_from_flags()
  finally:
    binary.FLAGS.unparse_flags()


def test_two_flag_names_are_one_setting():
  assert _whole_word_mask([]) is True  # ALBERT's default (BERT's is False)
  assert _whole_word_mask(["--whole_word_mask=false"]) is False
  assert _whole_word_mask(["--nodo_whole_word_mask"]) is False
  assert _whole_word_mask(["--whole_word_mask", "--do_whole_word_mask"]) is True
  with pytest.raises(errors.UsageError, match="disagree"):
    _whole_word_mask(["--nowhole_word_mask", "--do_whole_word_mask=true"])


def test_disagreeing_names_are_one_error_line(tmp_path):
  result = subprocess.run(
      [sys.executable, "-m", "albert_tf.create_pretraining_data", f"--input_file={ZH_CORPUS}",
       f"--output_file={tmp_path / 'out.tfrecord'}", f"--vocab_file={ZH_VOCAB}",
       "--whole_word_mask=false", "--do_whole_word_mask=true"],
      cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
  assert result.returncode == 2, result.stderr
  lines = [line for line in result.stderr.splitlines() if line.strip()]
  assert lines[-1].startswith("error: --whole_word_mask=False and --do_whole_word_mask=True "
                              "disagree") and "Traceback" not in result.stderr, result.stderr
  assert not os.listdir(tmp_path)
