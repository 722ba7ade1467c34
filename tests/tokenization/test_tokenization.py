"""FullTokenizer against the original's output, and the WordPiece path."""

import json
import os

import pytest

from albert_tf.tokenization import (BasicTokenizer, FullTokenizer, WordpieceTokenizer,
                                    preprocess_text)
from helpers import TESTDATA

DATA = os.path.join(TESTDATA, "original_pretraining_data")
SPM = os.path.join(DATA, "30k-clean-tiny.model")


def _lines():
  with open(os.path.join(DATA, "tokenization.jsonl"), encoding="utf-8") as f:
    return [json.loads(line) for line in f]


def test_every_fixture_line_reproduced():
  tokenizer = FullTokenizer(spm_model_file=SPM, do_lower_case=True)
  lines = _lines()
  assert len(lines) == 406
  for line in lines:
    assert preprocess_text(line["text"], lower=True) == line["preprocessed"], line["text"]
    pieces = tokenizer.tokenize(line["text"])
    assert pieces == line["pieces"], line["text"]
    assert tokenizer.convert_tokens_to_ids(pieces) == line["ids"], line["text"]
    assert tokenizer.convert_ids_to_tokens(line["ids"]) == [
        tokenizer.sp_model.IdToPiece(i) for i in line["ids"]]


def test_digit_comma_resplit_keeps_python3_quirk():
  tokenizer = FullTokenizer(spm_model_file=SPM)
  line = next(l for l in _lines() if l["text"].startswith("The extended form"))
  # "expression1," is re-encoded as "▁", "expression", "1" then ",": the leading "▁" stays.
  assert line["pieces"][10:14] == ["expression", "▁", "1", ","]
  assert tokenizer.tokenize(line["text"]) == line["pieces"]


def test_special_tokens_and_vocab():
  tokenizer = FullTokenizer(spm_model_file=SPM)
  assert tokenizer.convert_tokens_to_ids(["<pad>", "<unk>", "[CLS]", "[SEP]", "[MASK]"]) == [
      0, 1, 2, 3, 4]
  assert len(tokenizer.vocab) == 1000


def _write_vocab(tmp_path, tokens):
  path = tmp_path / "vocab.txt"
  path.write_text("\n".join(tokens) + "\n", encoding="utf-8")
  return str(path)


def test_wordpiece_path(tmp_path):
  vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "un", "##aff", "##able", "hello", ",",
           "world", "!", "cafe", "中", "x", "##y"]
  tokenizer = FullTokenizer(vocab_file=_write_vocab(tmp_path, vocab), do_lower_case=True)
  assert tokenizer.tokenize("UNAffable, Hello  world!") == [
      "un", "##aff", "##able", ",", "hello", "world", "!"]
  assert tokenizer.tokenize("Café中xyz qq") == ["cafe", "中", "[UNK]", "[UNK]"]
  assert tokenizer.tokenize("xy") == ["x", "##y"]
  assert tokenizer.convert_tokens_to_ids(["hello", "world"]) == [8, 10]
  assert tokenizer.convert_ids_to_tokens([5, 6]) == ["un", "##aff"]
  cased = FullTokenizer(vocab_file=_write_vocab(tmp_path, vocab), do_lower_case=False)
  assert cased.tokenize("Hello") == ["[UNK]"]


def test_basic_tokenizer_rules():
  basic = BasicTokenizer(do_lower_case=True)
  assert basic.tokenize("Héllo\u00a0WORLD\x00!\tok") == ["hello", "world", "!", "ok"]
  assert basic.tokenize("a$b^c") == ["a", "$", "b", "^", "c"]
  assert WordpieceTokenizer({"a": 0}, max_input_chars_per_word=3).tokenize("aaaa a") == [
      "[UNK]", "a"]


def test_missing_files():
  with pytest.raises(FileNotFoundError):
    FullTokenizer(spm_model_file="/nonexistent.model")
  with pytest.raises(FileNotFoundError):
    FullTokenizer(vocab_file="/nonexistent.txt")
