"""Data-reading edges shared by the tasks: a UTF-8 byte-order mark is dropped by every reader
(CoNLL, GLUE TSV, SQuAD and RACE JSON, pretraining corpora, label_list.txt), a byte that is not
UTF-8 is one DataFormatError line naming file and line, sizes below 1 (--doc_stride=0 looped
forever) are usage errors, the feature caches know a tokenizer by its contents, and the in-graph
tokenizer drops the marks the original drops (U+FE0F is no combining character)."""

import io as pyio
import json
import os
import signal

import pytest

from albert_tf.core import errors, io
from albert_tf.data.corpus import corpus_lines
from albert_tf.finetuning import feature_cache
from albert_tf.finetuning.windows import doc_spans
from albert_tf.checkpoints.labels import read_label_file
from albert_tf.core.settings import TokenizerSettings
from albert_tf.tasks.classifier.data import read_tsv
from albert_tf.tasks.ner import data, features
from albert_tf.tasks.race.data import RaceProcessor
from albert_tf.tasks.squad.data import load_squad_json

from helpers import TESTDATA, other_spm_model, run_binary

BOM = b"\xef\xbb\xbf"
NER = os.path.join(TESTDATA, "ner")
SPM = os.path.join(TESTDATA, "original_pretraining_data", "30k-clean-tiny.model")
TINY = os.path.join(NER, "albert_config_tiny.json")


def _pair(tmp_path, name, text):
  """(plain, with BOM): the same UTF-8 text saved without and with a byte-order mark."""
  paths = []
  for kind, prefix in (("plain", b""), ("bom", BOM)):
    directory = tmp_path / kind
    directory.mkdir(exist_ok=True)
    (directory / name).write_bytes(prefix + text.encode("utf-8"))
    paths.append(str(directory / name))
  return paths


def _one_error_line(result, code):
  assert result.returncode == code, result.stderr[-2000:]
  lines = [line for line in result.stderr.splitlines() if line.startswith("error:")]
  assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr[-2000:]
  return lines[0]


# ---- byte-order marks ------------------------------------------------------------------------
def test_a_byte_order_mark_is_dropped_by_every_reader(tmp_path):
  # CoNLL: the BOM made "\ufeff-DOCSTART-" a word, so one sentence too many.
  plain, bom = _pair(tmp_path, "train.txt", "-DOCSTART- -X- O\n\nEU B-ORG\nrejects O\n\nPeter "
                     "B-PER\n")
  assert data.read_conll(bom) == data.read_conll(plain)
  assert [s.words for s in data.read_conll(bom)] == [("EU", "rejects"), ("Peter",)]
  # A CoNLL file whose first line is a word: that word, not "\ufeffEU".
  plain, bom = _pair(tmp_path, "dev.txt", "EU B-ORG\n")
  assert data.read_conll(bom)[0].words == ("EU",)
  # GLUE TSV (CoLA has no header: the first id would carry the BOM).
  plain, bom = _pair(tmp_path, "train.tsv", "gj04\t1\t\tOur friends won't buy this.\n")
  assert read_tsv(bom) == read_tsv(plain) == [["gj04", "1", "", "Our friends won't buy this."]]
  # SQuAD JSON (json.load refused the BOM: "Unexpected UTF-8 BOM").
  squad = {"version": "1.1", "data": [{"title": "t", "paragraphs": []}]}
  plain, bom = _pair(tmp_path, "dev-v1.1.json", json.dumps(squad))
  assert load_squad_json(bom) == load_squad_json(plain) == squad["data"]
  # RACE: one article per line, the first line's JSON behind the BOM.
  article = {"id": "high1.txt", "article": "Tom runs.", "questions": ["Who runs?"],
             "options": [["Tom", "Ann", "Bob", "Eve"]], "answers": ["A"]}
  plain, bom = _pair(tmp_path, "1.txt", json.dumps(article) + "\n")
  race = RaceProcessor(use_spm=True)
  assert race._file_examples(bom) == race._file_examples(plain)
  # A pretraining corpus (read as bytes, as the original's tf.gfile readline).
  lines = list(corpus_lines(pyio.BytesIO(BOM + b"First line.\n\nSecond.\n"), "corpus.txt"))
  assert [(n, text) for n, text, _ in lines] == [(1, "First line."), (2, ""), (3, "Second.")]
  assert lines[-1][2] == len(BOM + b"First line.\n\nSecond.\n")  # progress counts the BOM
  # label_list.txt beside a checkpoint (Notepad adds a BOM when saving it).
  plain, bom = _pair(tmp_path, "label_list.txt", "O\nB-PER\n")
  assert read_label_file(os.path.dirname(bom)) == ["O", "B-PER"]


# ---- bytes that are not UTF-8 ----------------------------------------------------------------
def test_a_non_utf8_byte_names_file_line_and_offset(tmp_path):
  path = tmp_path / "train.txt"
  path.write_bytes(b"Peter B-PER\nZ\xfcrich B-LOC\n")  # latin-1 u-umlaut
  with pytest.raises(errors.DataFormatError,
                     match=r"train\.txt:2: byte 0xfc at offset 13 is not UTF-8 .*must be UTF-8"):
    data.read_conll(str(path))
  tsv = tmp_path / "dev.tsv"
  tsv.write_bytes(BOM + b"a\tb\n" * 3000 + b"caf\xe9\tx\n")  # past the reader's first chunk
  with pytest.raises(errors.DataFormatError, match=r"dev\.tsv:3001: byte 0xe9 at offset 12006"):
    read_tsv(str(tsv))
  with pytest.raises(errors.DataFormatError, match=r"corpus\.txt:2: not valid UTF-8"):
    list(corpus_lines(pyio.BytesIO(b"ok\nZ\xfcrich\n"), "corpus.txt"))


def test_run_ner_reports_a_latin1_file_as_one_line(tmp_path):
  data_dir = tmp_path / "data"
  data_dir.mkdir()
  (data_dir / "train.txt").write_bytes(b"Peter B-PER\nruns O\n\nZ\xfcrich B-LOC\n")
  result = run_binary("run_ner", [f"--data_dir={data_dir}", f"--output_dir={tmp_path / 'out'}",
                                  f"--spm_model_file={SPM}", f"--albert_config_file={TINY}",
                                  "--do_train", "--max_seq_length=32"], check=False)
  line = _one_error_line(result, errors.FAILED_RUN_EXIT_CODE)
  assert f"{data_dir / 'train.txt'}:4: byte 0xfc" in line and "must be UTF-8" in line, line


# ---- sizes below 1 ---------------------------------------------------------------------------
@pytest.mark.parametrize("binary, flag", [
    ("run_squad_v1", "--doc_stride=0"), ("run_squad_v2", "--doc_stride=-3"),
    ("run_squad_v1", "--max_query_length=0"), ("run_squad_v2", "--n_best_size=0"),
    ("run_squad_v1", "--max_answer_length=0"), ("run_squad_v1", "--predict_batch_size=0"),
    ("run_ner", "--doc_stride=0"), ("run_ner", "--max_seq_length=0"),
    ("run_ner", "--eval_batch_size=0")])
def test_sizes_below_1_are_usage_errors(binary, flag, tmp_path):
  common = [f"--output_dir={tmp_path / 'out'}", f"--spm_model_file={SPM}",
            f"--albert_config_file={TINY}", "--do_predict"]
  task = ([f"--data_dir={NER}"] if binary == "run_ner" else
          [f"--predict_file={tmp_path / 'dev.json'}"])
  # Before the fix run_ner and run_squad looped forever in doc_spans: the timeout fails them.
  result = run_binary(binary, common + task + [flag], check=False, timeout=120)
  line = _one_error_line(result, errors.USAGE_EXIT_CODE)
  # A sequence holds [CLS], a piece and [SEP]: 3 is the least max_seq_length.
  least = 3 if flag.startswith("--max_seq_length") else 1
  assert f"{flag}: must be at least {least}" in line, line
  assert not (tmp_path / "out").exists()


def test_doc_spans_refuses_a_stride_below_1():
  def hang(*_):
    raise AssertionError("doc_spans loops forever")
  previous = signal.signal(signal.SIGALRM, hang)
  signal.alarm(10)
  try:
    for stride, window in ((0, 4), (-1, 4), (2, 0)):
      with pytest.raises(errors.UsageError, match="must be at least 1"):
        doc_spans(10, window, stride)
  finally:
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)
  assert doc_spans(10, 4, 3) == [(0, 4), (3, 4), (6, 4)]


# ---- the tokenizer of a feature cache ---------------------------------------------------------
def test_a_cache_stamp_holds_the_tokenizer_contents_not_its_name(tmp_path):
  other = other_spm_model(tmp_path / "other" / os.path.basename(SPM))
  first, second = TokenizerSettings(spm_model_file=SPM), TokenizerSettings(spm_model_file=other)
  a, b = (feature_cache.tokenizer_fingerprint(t) for t in (first, second))
  assert a["tokenizer"] == b["tokenizer"] == "30k-clean-tiny.model"
  assert a != b and a["tokenizer_sha256"] == io.sha256(SPM)
  assert a != feature_cache.tokenizer_fingerprint(TokenizerSettings(spm_model_file=SPM,
                                                                    do_lower_case=False))
  # NER's stamp: another model of the same file name makes the cache stale.
  conll = os.path.join(NER, "dev.txt")
  ner = features.cache_inputs(conll, ["O"], 8)
  assert feature_cache.make_stamp(first, **ner) != feature_cache.make_stamp(second, **ner)

  # Every task's cache (FineTuningJob.cached_features): written with `first`, stale for `second`.
  path = str(tmp_path / "mrpc_train.tf_record")
  writes = []

  def write():
    writes.append(1)
    with open(path, "wb") as f:
      f.write(b"records")
  stamp_a, stamp_b = (feature_cache.make_stamp(t, max_seq_length=32) for t in (first, second))
  cached, stamped = feature_cache.checked(path, stamp_a, write)
  assert not cached
  stamped()
  assert json.load(open(feature_cache.stamp_path(path))) == stamp_a
  assert feature_cache.checked(path, stamp_a, write)[0]
  cached, stamped = feature_cache.checked(path, stamp_b, write)
  assert not cached
  stamped()
  assert writes == [1, 1] and json.load(open(feature_cache.stamp_path(path))) == stamp_b


# ---- U+FE0F ----------------------------------------------------------------------------------
def test_in_graph_tokenizer_drops_the_marks_the_original_drops():
  import tensorflow as tf
  from albert_tf.tokenization import FullTokenizer
  from albert_tf.tokenization.in_graph import InGraphTokenizer
  # U+FE0F (emoji variation selector), U+FE0E, Thai U+0E34: category Mn but combining class 0,
  # kept by the original's preprocess_text; U+0301 (class 230) is dropped by both.
  words = ["\ufe0f", "\u2764\ufe0f", "\ufe0e", "\u0e34", "caf\u00e9", "e\u0301", "\u0301",
           "Paris"]
  python = FullTokenizer(spm_model_file=SPM)
  expected = [python.convert_tokens_to_ids(python.tokenize(w)) for w in words]
  assert expected[0] == python.convert_tokens_to_ids(["\u2581", "\ufe0f"])  # 2 pieces
  assert InGraphTokenizer(SPM).ids(tf.constant(words)).to_list() == expected
