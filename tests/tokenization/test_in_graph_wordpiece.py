"""The in-graph WordPiece tokenizer against the original's FullTokenizer(vocab_file) ids on every
fixture line, in process and through a SavedModel loaded without albert_tf; its packing against
the original's classifier features; [UNK] words; and the ops its SavedModel needs."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf
from tensorflow.core.protobuf import saved_model_pb2

from albert_tf.tasks.classifier.features import convert_single_example
from albert_tf.tasks.classifier.data import InputExample
from albert_tf.tokenization import FullTokenizer
from albert_tf.tokenization.in_graph import InGraphTokenizer
from albert_tf.tokenization.in_graph_wordpiece import WordpieceInGraphTokenizer
from helpers import TESTDATA

DATA = os.path.join(TESTDATA, "original_wordpiece")
VOCAB = os.path.join(DATA, "vocab.txt")
CASINGS = {"lower": True, "cased": False}
MAX_SEQ_LENGTH = 24  # short, so that most fixture pairs are truncated

# The ops tensorflow-text 2.12 registers: older TF Serving images know no others.
TF_TEXT_2_12_OPS = frozenset("""
    CaseFoldUTF8 ConstrainedSequence FastBertNormalize FastWordpieceTokenizeWithOffsets
    FindSourceOffsets MaxSpanningTree NormalizeUTF8 NormalizeUTF8WithOffsetsMap PhraseTokenize
    RegexSplitWithOffsets RougeL SentenceFragments SentenceFragmentsV2 SentencepieceDetokenizeOp
    SentencepieceIdToStringOp SentencepieceOp SentencepieceStringToIdOp SentencepieceTokenizeOp
    SentencepieceTokenizeWithOffsetsOp SentencepieceVocabSizeOp SplitMergeTokenizeWithOffsets
    TFText>BoiseTagsToOffsets TFText>ByteSplitByOffsets TFText>ByteSplitWithOffsets
    TFText>FastSentencepieceDetokenize TFText>FastSentencepieceTokenize
    TFText>FastWordpieceDetokenize TFText>NgramsStringJoin TFText>OffsetsToBoiseTags
    TFText>PhraseDetokenize TFText>RoundRobinGenerateMasks TFText>RoundRobinTrim
    TFText>WhitespaceTokenizeWithOffsetsV2 TokenizerFromLogits UnicodeScriptTokenizeWithOffsets
    WhitespaceTokenizeWithOffsets WordpieceTokenizeWithOffsets""".split())


def _lines(casing):
  with open(os.path.join(DATA, f"tokenization_{casing}.jsonl"), encoding="utf-8") as f:
    return [json.loads(l) for l in f]


def _texts():
  return [l["text"] for l in _lines("lower")]  # both files tokenize the same texts


def _pairs():
  texts = _texts()
  return texts[:-1], texts[1:]


def _expected_features(texts, texts_b=None):
  """The original's classifier features (input_ids, input_mask, segment_ids: [B, T] arrays)."""
  full = FullTokenizer(VOCAB, do_lower_case=True)
  features = [convert_single_example(InputExample("x", a, b, "0"), ["0"], MAX_SEQ_LENGTH, full)
              for a, b in zip(texts, texts_b or [None] * len(texts))]
  return {k: np.array([getattr(f, k) for f in features])
          for k in ("input_ids", "input_mask", "segment_ids")}


def _assert_same_features(got, expected):
  for key, value in expected.items():
    np.testing.assert_array_equal(np.asarray(got[key]), value, err_msg=key)


@pytest.fixture(scope="module")
def tokenizers():
  return {casing: WordpieceInGraphTokenizer(VOCAB, lower) for casing, lower in CASINGS.items()}


@pytest.mark.parametrize("casing", CASINGS)
def test_ids_equal_the_original_on_every_fixture_line(tokenizers, casing):
  lines = _lines(casing)
  assert len(lines) == 2422
  got = tokenizers[casing].ids([l["text"] for l in lines]).to_list()
  assert [l["text"] for l, ids in zip(lines, got) if ids != l["ids"]] == []
  pieces = tokenizers[casing].pieces([lines[1]["text"]]).to_list()[0]
  assert [p.decode() for p in pieces] == lines[1]["tokens"]


def test_pack_equals_the_original_features(tokenizers):
  tokenizer = tokenizers["lower"]
  texts, texts_b = _pairs()
  _assert_same_features(tokenizer.pack(texts, max_seq_length=MAX_SEQ_LENGTH),
                        _expected_features(texts))
  _assert_same_features(tokenizer.pack(texts, texts_b, MAX_SEQ_LENGTH),
                        _expected_features(texts, texts_b))
  # A text_b without tokens packs as a single text; a lone string is a batch of one.
  odd_a, odd_b = ["Hello world", "你好"], ["", " \t\u200b"]
  _assert_same_features(tokenizer.pack(odd_a, odd_b, MAX_SEQ_LENGTH),
                        _expected_features(odd_a, odd_b))
  _assert_same_features(tokenizer.pack(tf.constant(texts[0]), max_seq_length=MAX_SEQ_LENGTH),
                        _expected_features(texts[:1]))


def test_both_tokenizers_have_what_exports_use(tokenizers):
  spm = os.path.join(TESTDATA, "original_pretraining_data", "30k-clean-tiny.model")
  sentencepiece = InGraphTokenizer(spm)
  wordpiece = tokenizers["lower"]
  assert (sentencepiece.model_file, sentencepiece.vocab_size) == (spm, 1000)
  assert (wordpiece.model_file, wordpiece.vocab_size) == (VOCAB, 1155)
  assert (sentencepiece.cls_id, sentencepiece.sep_id) == (2, 3)
  assert (wordpiece.cls_id, wordpiece.sep_id) == (2, 3)
  assert sentencepiece.sp.vocab_size() == 1000  # existing callers use sp


def test_unknown_words(tokenizers, tmp_path):
  tokenizer = tokenizers["lower"]
  words = ["a" * 200, "a" * 201, "snow\u2603man", "\u2603"]
  got = [[p.decode() for p in row] for row in tokenizer.pieces(words).to_list()]
  assert got[0] == ["a"] + ["##a"] * 199
  assert got[1:] == [["[UNK]"]] * 3
  # The limit counts characters, as the original, not the tf-text op's bytes.
  vocab = tmp_path / "vocab.txt"
  vocab.write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\n\u00e9\n##\u00e9\n", encoding="utf-8")
  cased = WordpieceInGraphTokenizer(str(vocab), do_lower_case=False)
  text = ["\u00e9" * 200 + " " + "\u00e9" * 201]
  full = FullTokenizer(str(vocab), do_lower_case=False)
  assert cased.ids(text).to_list()[0] == full.convert_tokens_to_ids(full.tokenize(text[0]))
  assert cased.ids(text).to_list()[0] == [4] + [5] * 199 + [1]
  assert (cased.vocab_size, cased.cls_id, cased.sep_id, cased.model_file) == (6, 2, 3, str(vocab))


def test_vocab_read_as_the_original(tmp_path):
  # Only a line's first field counts, a blank line is " ", a repeated token takes no id.
  vocab = tmp_path / "vocab.txt"
  vocab.write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\nfoo 17\n\nfoo\nbar\n", encoding="utf-8")
  tokenizer = WordpieceInGraphTokenizer(str(vocab))
  full = FullTokenizer(str(vocab))
  assert tokenizer.ids(["Foo bar baz"]).to_list()[0] == [4, 6, 1]
  assert full.convert_tokens_to_ids(full.tokenize("Foo bar baz")) == [4, 6, 1]
  assert tokenizer.vocab_size == len(full.vocab) == 7


class _Served(tf.Module):
  """What an export serves: ids of both casings (flat values and row lengths, as a signature
  cannot return ragged tensors), and lower-cased pair packing; the vocab file as an asset."""

  def __init__(self, tokenizers):
    super().__init__()
    self.tokenizers = tokenizers
    self.vocab = tf.saved_model.Asset(tokenizers["lower"].model_file)
    text = tf.TensorSpec([None], tf.string, name="text")
    self.functions = {f"ids_{casing}": tf.function(self._ids(t), input_signature=[text])
                      for casing, t in tokenizers.items()}
    self.functions["pack"] = tf.function(
        lambda text, text_b: tokenizers["lower"].pack(text, text_b, MAX_SEQ_LENGTH),
        input_signature=[text, tf.TensorSpec([None], tf.string, name="text_b")])

  @staticmethod
  def _ids(tokenizer):
    def ids(text):
      ragged = tokenizer.ids(text)
      return {"ids": ragged.flat_values, "row_lengths": ragged.row_lengths()}
    return ids


# Only TF and tensorflow-text, as TF Serving; ICU's default locale Turkish, where lower-casing
# "I" with the locale would give a dotless "ı".
_LOAD = """
import json, sys
import tensorflow as tf
import tensorflow_text
model = tf.saved_model.load(sys.argv[1])
with open(sys.argv[2], encoding="utf-8") as f:
  texts, texts_b = json.load(f)
out = {"asset": model.vocab.asset_path.numpy().decode()}
for casing in ("lower", "cased"):
  got = model.signatures["ids_" + casing](text=tf.constant(texts))
  out[casing] = tf.RaggedTensor.from_row_lengths(got["ids"], got["row_lengths"]).to_list()
packed = model.signatures["pack"](text=tf.constant(texts), text_b=tf.constant(texts_b))
out["pack"] = {k: v.numpy().tolist() for k, v in packed.items()}
# REST's columnar form feeds a lone string to the [B] input: a batch of one.
one = model.signatures["pack"](text=tf.constant(texts[0]), text_b=tf.constant(texts_b[0]))
out["one"] = {k: v.numpy().tolist() for k, v in one.items()}
assert "albert_tf" not in sys.modules
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def saved_model(tokenizers, tmp_path_factory):
  """The _Served SavedModel, saved, then moved: nothing in it may point at where it was saved."""
  base = tmp_path_factory.mktemp("wordpiece")
  module = _Served(tokenizers)
  tf.saved_model.save(module, str(base / "saved"), signatures=module.functions)
  os.rename(base / "saved", base / "moved")
  return str(base / "moved")


@pytest.mark.slow  # a TensorFlow start-up
def test_saved_model_in_a_process_without_albert_tf(saved_model, tmp_path):
  texts_file = tmp_path / "texts.json"
  texts_file.write_text(json.dumps(_pairs()), encoding="utf-8")
  env = dict(os.environ, LC_ALL="tr_TR.UTF-8", LANG="tr_TR.UTF-8")
  env.pop("PYTHONPATH", None)
  result = subprocess.run([sys.executable, "-c", _LOAD, saved_model, str(texts_file)],
                          capture_output=True, text=True, timeout=300, cwd=str(tmp_path), env=env)
  assert result.returncode == 0, result.stderr[-3000:]
  got = json.loads(result.stdout.strip().splitlines()[-1])
  assert got["asset"] == os.path.join(saved_model, "assets", "vocab.txt")
  for casing in CASINGS:
    lines = _lines(casing)[:-1]
    assert [l["text"] for l, ids in zip(lines, got[casing]) if ids != l["ids"]] == []
  expected = _expected_features(*_pairs())
  _assert_same_features(got["pack"], expected)
  _assert_same_features(got["one"], {k: v[:1] for k, v in expected.items()})


def _saved_ops(saved_model_dir):
  """Every op in the SavedModel's graphs: their nodes and every library function's nodes."""
  proto = saved_model_pb2.SavedModel()
  with open(os.path.join(saved_model_dir, "saved_model.pb"), "rb") as f:
    proto.ParseFromString(f.read())
  ops, functions = set(), set()
  for graph in (m.graph_def for m in proto.meta_graphs):
    ops.update(node.op for node in graph.node)
    for function in graph.library.function:
      functions.add(function.signature.name)
      ops.update(node.op for node in function.node_def)
  return ops - functions  # a node may call a library function by its name


def test_ops_are_core_tf_or_tf_text_2_12(saved_model):
  ops = _saved_ops(saved_model)
  # tf.raw_ops lists TF's own ops; the tf-text ops are loaded from its libraries.
  tf_text_ops = {op for op in ops if not hasattr(tf.raw_ops, op)}
  assert tf_text_ops == {"NormalizeUTF8", "RegexSplitWithOffsets", "WordpieceTokenizeWithOffsets"}
  assert tf_text_ops <= TF_TEXT_2_12_OPS
  assert {"StringLower", "StaticRegexReplace", "UnicodeTranscode", "LookupTableFindV2"} <= ops
