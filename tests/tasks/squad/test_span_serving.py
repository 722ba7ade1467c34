"""The SQuAD / CMRC 2018 SavedModel's answer signature on contexts without pieces (empty,
whitespace only, NUL-led: the text ops stop at a NUL): each is answered "" with the no-span
score, as predictions.json answers an example without windows, and the other contexts of the
batch are answered as alone."""

import os

import numpy as np
import pytest
import tensorflow as tf

import albert_tf
from albert_tf.core.settings import TokenizerSettings
from albert_tf.export.saved_model import export_saved_model
from albert_tf.tasks.squad.export import NO_ANSWER_SCORE, SquadServingModule
from helpers import ORIGINAL_MODEL, TESTDATA

SPM = os.path.join(TESTDATA, "original_pretraining_data", "30k-clean-tiny.model")
CMRC = os.path.join(TESTDATA, "cmrc2018")
WITHOUT_PIECES = ["", "   \n\t", "\0The cat sat on the mat."]
CONTEXT = "The cat sat on the mat. It was a sunny day and the dog barked."


def _module(kind):
  if kind == "wordpiece":
    config = albert_tf.AlbertConfig.from_json_file(os.path.join(CMRC, "albert_config_tiny.json"))
    return SquadServingModule(albert_tf.AlbertSpanLabeler(config),
                              TokenizerSettings(vocab_file=os.path.join(CMRC, "vocab.txt")), 32,
                              doc_stride=8, max_query_length=8)
  config = albert_tf.AlbertConfig.from_json_file(os.path.join(ORIGINAL_MODEL,
                                                              "albert_config.json"))
  v2 = kind == "v2"
  model = albert_tf.AlbertSquadV2(config) if v2 else albert_tf.AlbertSpanLabeler(config)
  return SquadServingModule(model, TokenizerSettings(spm_model_file=SPM), 32, doc_stride=8,
                            max_query_length=8, v2=v2)


def _answers(serve, contexts):
  out = serve(question=tf.constant(["Who sat?"] * len(contexts), tf.string),
              context=tf.constant(contexts, tf.string))
  return {name: value.numpy().tolist() for name, value in out.items()}


def _check(serve, v2):
  alone = _answers(serve, [CONTEXT])
  mixed = _answers(serve, WITHOUT_PIECES + [CONTEXT])
  assert mixed["answer"] == [b""] * 3 + alone["answer"]
  assert mixed["score"][:3] == [NO_ANSWER_SCORE] * 3 == [-2e6] * 3
  np.testing.assert_allclose(mixed["score"][3], alone["score"][0], rtol=1e-5)
  # A batch of contexts without pieces only: no window at all.
  only = _answers(serve, WITHOUT_PIECES)
  assert only["answer"] == [b""] * 3 and only["score"] == [-2e6] * 3
  if v2:  # postprocess.null_scores' value for an example without windows
    assert mixed["null_odds"][:3] == [1e6] * 3 and only["null_odds"] == [1e6] * 3
    np.testing.assert_allclose(mixed["null_odds"][3], alone["null_odds"][0], rtol=1e-5)
  # And an empty batch still serves.
  assert all(len(v) == 0 for v in _answers(serve, []).values())


@pytest.mark.slow  # tracing the answer signature: over 10 s
@pytest.mark.parametrize("kind", ["v1", "wordpiece"])
def test_contexts_without_pieces_are_answered_empty(kind):
  module = _module(kind)
  _check(lambda **texts: module.serve(**texts), v2=False)


@pytest.mark.slow  # two exports
@pytest.mark.parametrize("kind", ["v1", "v2"])
def test_saved_model_answers_contexts_without_pieces_empty(kind, tmp_path):
  path = export_saved_model(_module(kind), str(tmp_path), 1)
  _check(tf.saved_model.load(path).signatures["serving_default"], v2=kind == "v2")
