"""Bad serving requests fail with a message saying what was expected and what came, checked in
the graph of every exported module (pretraining, classifier, SQuAD), as a SavedModel loaded
without albert_tf and TF Serving's feed path see it; good requests give what they gave."""

import json
import os

import numpy as np
import pytest
import tensorflow as tf

import albert_tf
from albert_tf.tasks.classifier.export import ClassifierServingModule
from albert_tf.core.settings import TokenizerSettings
from albert_tf.export.saved_model import ServingModule, export_saved_model
from albert_tf.tasks.squad.export import SquadServingModule
from albert_tf.tokenization.in_graph import InGraphTokenizer
from helpers import ORIGINAL_MODEL, TESTDATA, reference_batch
import warm_binaries

CONFIG = os.path.join(ORIGINAL_MODEL, "albert_config.json")
CKPT0 = os.path.join(ORIGINAL_MODEL, "model.ckpt-0")
SPM = os.path.join(TESTDATA, "original_pretraining_data", "30k-clean-tiny.model")
MAX_SEQ_LENGTH = 16


def _config():
  return albert_tf.AlbertConfig.from_json_file(CONFIG)  # vocab 1000, 64 positions


def _export(module, base):
  return tf.saved_model.load(export_saved_model(module, str(base), 1))


@pytest.fixture(scope="module")
def pretraining(tmp_path_factory):
  model = albert_tf.AlbertPretrainer(_config())
  albert_tf.load_original_checkpoint(model, CKPT0)
  base = tmp_path_factory.mktemp("pretraining")
  module = ServingModule(model, TokenizerSettings(spm_model_file=SPM), MAX_SEQ_LENGTH)
  return model, _export(module, base), str(base / "1")


@pytest.fixture(scope="module")
def classifier(tmp_path_factory):
  model = albert_tf.AlbertClassifier(_config(), num_labels=2)
  module = ClassifierServingModule(model, TokenizerSettings(spm_model_file=SPM), ["no", "yes"],
                                   pair=True, max_seq_length=MAX_SEQ_LENGTH)
  return model, _export(module, tmp_path_factory.mktemp("classifier"))


@pytest.fixture(scope="module", params=["v1", "v2"])
def squad(request, tmp_path_factory):
  v2 = request.param == "v2"
  model = albert_tf.AlbertSquadV2(_config()) if v2 else albert_tf.AlbertSpanLabeler(_config())
  module = SquadServingModule(model, TokenizerSettings(spm_model_file=SPM), 32, doc_stride=8,
                              max_query_length=8, v2=v2)
  return model, _export(module, tmp_path_factory.mktemp("squad"))


def _ids(*rows):
  return tf.constant(np.asarray(rows, np.int32))


GOOD = {"input_ids": [[2, 10, 3]], "input_mask": [[1, 1, 1]], "segment_ids": [[0, 0, 0]]}

# (name, replaced inputs, expected message). Each breaks one thing of GOOD.
BAD_TOKENS = [
    ("rank 1", {"input_ids": [2, 10, 3], "input_mask": [1, 1, 1], "segment_ids": [0, 0, 0]},
     "input_ids must be [batch, length] int32, got shape [3]"),
    ("rank 3", {"input_ids": [[[2, 10, 3]]]},
     "input_ids must be [batch, length] int32, got shape [1, 1, 3]"),
    ("mask rank 1", {"input_mask": [1, 1, 1]},
     "input_mask must be [batch, length] int32, got shape [3]"),
    ("length 0", {"input_ids": np.zeros([1, 0]), "input_mask": np.zeros([1, 0]),
                  "segment_ids": np.zeros([1, 0])},
     "input_ids must hold at least one token per example ([CLS]), got shape [1, 0]"),
    ("mask shorter", {"input_mask": [[1, 1]]},
     "input_mask must have the shape of input_ids, [1, 3], got [1, 2]"),
    # This one served before, wrongly: segment_ids of batch 2 broadcast over input_ids' batch 1.
    ("segment batch", {"segment_ids": [[0, 0, 0], [0, 0, 0]]},
     "segment_ids must have the shape of input_ids, [1, 3], got [2, 3]"),
    ("too long", {name: np.ones([1, 65]) for name in GOOD},
     "input_ids length must be at most max_position_embeddings (64), got shape [1, 65]"),
    ("id beyond vocab", {"input_ids": [[2, 1000, 3]]},
     "input_ids must be in [0, 1000) (vocab_size), got values from 2 to 1000"),
    ("negative id", {"input_ids": [[2, -1, 3]]},
     "input_ids must be in [0, 1000) (vocab_size), got values from -1 to 3"),
    ("segment 2", {"segment_ids": [[0, 1, 2]]},
     "segment_ids must be in [0, 2) (type_vocab_size), got values from 0 to 2"),
    # These served before, wrongly: a mask of 2 weighs a position twice.
    ("mask 2", {"input_mask": [[1, 2, 1]]},
     "input_mask must be 0 or 1 (1 for a real token, 0 for padding), got values from 1 to 2"),
    ("mask -1", {"input_mask": [[1, 1, -1]]},
     "input_mask must be 0 or 1 (1 for a real token, 0 for padding), got values from -1 to 1"),
]


def _call(signature, inputs):
  return signature(**{k: tf.constant(np.asarray(v, np.int32)) for k, v in inputs.items()})


def _error(signature, inputs):
  with pytest.raises(tf.errors.InvalidArgumentError) as info:
    _call(signature, inputs)
  return info.value.message


@pytest.mark.parametrize("signature", ["tokens", "sop_log_probs", "mlm"])
@pytest.mark.parametrize("name,bad,expected", BAD_TOKENS, ids=[c[0] for c in BAD_TOKENS])
def test_pretraining_token_signatures(pretraining, signature, name, bad, expected):
  del name
  inputs = dict(GOOD, **bad)
  if signature == "mlm":
    inputs["mlm_positions"] = np.zeros([np.asarray(inputs["input_ids"]).shape[0], 1])
  assert expected in _error(pretraining[1].signatures[signature], inputs)


@pytest.mark.parametrize("positions,expected", [
    ([1, 2], "mlm_positions must be [batch, positions] int32, got shape [2]"),
    ([[1], [2]], "mlm_positions must have the batch size of input_ids, 1, got shape [2, 1]"),
    ([[1, 3]], "mlm_positions must be in [0, 3) (the length of input_ids), got values from 1 to 3"),
    ([[-1]], "mlm_positions must be in [0, 3) (the length of input_ids), got values from -1 to -1"),
])
def test_mlm_positions(pretraining, positions, expected):
  inputs = dict(GOOD, mlm_positions=positions)
  assert expected in _error(pretraining[1].signatures["mlm"], inputs)


@pytest.mark.parametrize("inputs,expected", [
    ({"text": ["a", "b"], "text_b": ["c", "d", "e"]},
     "text and text_b must have the same batch size, got 2 and 3"),
    ({"text": ["a", "b", "c"], "text_b": ["d", "e"]},
     "text and text_b must have the same batch size, got 3 and 2"),
    ({"text": "a", "text_b": ["d", "e"]},
     "text and text_b must have the same batch size, got 1 and 2"),
    ({"text": [["a", "b"], ["c", "d"]], "text_b": ["e", "f"]},
     "text must be [batch] string, got shape [2, 2]"),
])
def test_pretraining_text_pair(pretraining, inputs, expected):
  with pytest.raises(tf.errors.InvalidArgumentError, match=expected.replace("[", r"\[")):
    pretraining[1].signatures["serving_text_pair"](
        **{k: tf.constant(v) for k, v in inputs.items()})


# Invalid UTF-8 served before, its bytes dropped one by one: b"\xff\xfe" gave [CLS] [SEP].
BAD_TEXT = [b"caf\xe9 \xff\xfe bad", b"\xff\xfe", b"a\xe2\x82", b"\xed\xa0\x80", b"\xc0\xaf"]
GOOD_TEXT = ["caf\u00e9 ok", "", "\ufeffx \x00 \uffff \ufffd \U0001F600", "The cat sat."]


def _utf8_error(signature, names, bad_name, index, bad):
  """The error of a request whose `bad_name`[index] is `bad` (the other texts good)."""
  texts = {name: [t.encode() for t in GOOD_TEXT] for name in names}
  texts[bad_name][index] = bad
  with pytest.raises(tf.errors.InvalidArgumentError) as info:
    signature(**{name: tf.constant(v) for name, v in texts.items()})
  return info.value.message


@pytest.mark.parametrize("bad", BAD_TEXT)
def test_raw_text_refuses_invalid_utf8_naming_the_request(pretraining, classifier, bad):
  served = pretraining[1]
  for index in (0, 3):
    message = _utf8_error(served.signatures["serving_default"], ["text"], "text", index, bad)
    assert f"text[{index}] is not valid UTF-8 text" in message
    message = _utf8_error(served.signatures["serving_text_pair"], ["text", "text_b"], "text_b",
                          index, bad)
    assert f"text_b[{index}] is not valid UTF-8 text" in message
  message = _utf8_error(classifier[1].signatures["serving_default"], ["text", "text_b"],
                        "text", 2, bad)
  assert "text[2] is not valid UTF-8 text" in message
  with pytest.raises(tf.errors.InvalidArgumentError, match=r"text\[0\] is not valid UTF-8"):
    served.signatures["serving_default"](text=tf.constant(bad))  # one text, as REST sends it
  # Valid UTF-8 (a BOM, NUL, noncharacters, U+FFFD itself) still serves.
  out = served.signatures["serving_default"](text=tf.constant(GOOD_TEXT))
  packed = InGraphTokenizer(SPM).pack(tf.constant(GOOD_TEXT), max_seq_length=MAX_SEQ_LENGTH)
  np.testing.assert_array_equal(out["input_ids"], packed["input_ids"])


def test_pretraining_good_inputs_unchanged(pretraining):
  model, served, _ = pretraining
  ref = reference_batch()
  ids = {k: ref[k] for k in GOOD}
  out = _call(served.signatures["tokens"], ids)
  keras_out = model.encoder({k: tf.constant(v) for k, v in ids.items()})
  for key in ("pooled_output", "sequence_output"):
    np.testing.assert_allclose(out[key], keras_out[key], atol=1e-5)
  # The original graph's log-probabilities (tests/testdata/FIXTURES_README.md).
  sop = _call(served.signatures["sop_log_probs"], ids)["sop_log_probs"]
  np.testing.assert_allclose(sop, ref["sentence_order_log_probs"], atol=1e-5)
  logits = _call(served.signatures["mlm"], dict(ids, mlm_positions=ref["masked_lm_positions"]))
  np.testing.assert_allclose(tf.nn.log_softmax(logits["mlm_logits"]).numpy().reshape(15, 1000),
                             ref["masked_lm_log_probs"], atol=1e-5)
  # An empty batch and an empty position list still serve.
  empty = _call(served.signatures["tokens"], {k: np.zeros([0, 3]) for k in GOOD})
  assert empty["pooled_output"].shape == (0, 32)
  no_positions = _call(served.signatures["mlm"], dict(GOOD, mlm_positions=np.zeros([1, 0])))
  assert no_positions["mlm_logits"].shape == (1, 0, 1000)
  # One string (REST's columnar form of a single text) is still a batch of one.
  one = served.signatures["serving_default"](text=tf.constant("The cat sat."))
  batch = served.signatures["serving_default"](text=tf.constant(["The cat sat.", "x"]))
  np.testing.assert_array_equal(one["input_ids"][0], batch["input_ids"][0])
  np.testing.assert_allclose(one["pooled_output"][0], batch["pooled_output"][0], atol=1e-6)
  pair = served.signatures["serving_text_pair"](text=tf.constant(["The cat sat.", "x"]),
                                                text_b=tf.constant(["On the mat.", "y"]))
  packed = InGraphTokenizer(SPM).pack(tf.constant(["The cat sat.", "x"]),
                                      tf.constant(["On the mat.", "y"]), MAX_SEQ_LENGTH)
  np.testing.assert_array_equal(pair["input_ids"], packed["input_ids"])
  np.testing.assert_allclose(pair["pooled_output"], model.encoder(packed)["pooled_output"],
                             atol=1e-5)


def test_classifier(classifier):
  model, served = classifier
  for _, bad, expected in BAD_TOKENS:
    assert expected in _error(served.signatures["tokens"], dict(GOOD, **bad))
  with pytest.raises(tf.errors.InvalidArgumentError,
                     match="text and text_b must have the same batch size, got 2 and 1"):
    served.signatures["serving_default"](text=tf.constant(["a", "b"]), text_b=tf.constant(["c"]))
  texts, texts_b = tf.constant(["The cat sat.", "x"]), tf.constant(["On the mat.", "y"])
  out = served.signatures["serving_default"](text=texts, text_b=texts_b)
  packed = InGraphTokenizer(SPM).pack(texts, texts_b, MAX_SEQ_LENGTH)
  probabilities = tf.nn.softmax(model(packed)["logits"]).numpy()
  np.testing.assert_allclose(out["probabilities"], probabilities, atol=1e-6)
  np.testing.assert_allclose(_call(served.signatures["tokens"], packed)["probabilities"],
                             probabilities, atol=1e-6)
  assert [x.decode() for x in out["label"].numpy()] == [["no", "yes"][int(i)]
                                                         for i in probabilities.argmax(1)]


@pytest.mark.slow  # two more exports
def test_squad(squad):
  model, served = squad
  good = dict(GOOD, p_mask=[[1, 0, 1]])
  for _, bad, expected in BAD_TOKENS + [
      ("p_mask", {"p_mask": [[1, 0]]}, "p_mask must have the shape of input_ids, [1, 3], got "
                                       "[1, 2]"),
      ("p_mask rank 3", {"p_mask": [[[1, 0, 1]]]},
       "p_mask must be [batch, length] int32, got shape [1, 1, 3]")]:
    inputs = dict(good, **bad)
    if "p_mask" not in bad:
      inputs["p_mask"] = np.zeros(np.asarray(inputs["input_ids"]).shape)
    assert expected in _error(served.signatures["features"], inputs)
  with pytest.raises(tf.errors.InvalidArgumentError,
                     match="question and context must have the same batch size, got 2 and 1"):
    served.signatures["serving_default"](question=tf.constant(["who?", "what?"]),
                                         context=tf.constant(["The cat sat."]))
  with pytest.raises(tf.errors.InvalidArgumentError,
                     match=r"question\[1\] is not valid UTF-8 text"):
    served.signatures["serving_default"](question=tf.constant([b"who?", b"\xff\xfe"]),
                                         context=tf.constant(["The cat sat.", "x"]))
  with pytest.raises(tf.errors.InvalidArgumentError,
                     match=r"context must be \[batch\] string, got shape \[1, 1\]"):
    served.signatures["serving_default"](question=tf.constant(["who?"]),
                                         context=tf.constant([["The cat sat."]]))
  ref = reference_batch()
  features = {k: ref[k] for k in GOOD}
  features["p_mask"] = 1 - ref["segment_ids"]
  out = _call(served.signatures["features"], features)
  keras_out = model({k: tf.constant(v) for k, v in features.items()})
  names = ({"start_log_prob": "start_logits", "end_log_prob": "end_logits"}
           if "start_log_prob" in out else {k: k for k in out})
  for name, keras_name in names.items():
    np.testing.assert_allclose(out[name], keras_out[keras_name], atol=1e-5)
  answer = served.signatures["serving_default"](question=tf.constant(["Who sat?"]),
                                                context=tf.constant(["The cat sat on the mat."]))
  assert answer["answer"].shape == (1,)


# As TF Serving sees it: no albert_tf; the SavedModel loaded into a session by the TF1 loader
# (TF Serving's C++ loader does the same: variables restored from the object graph), and the
# request fed as it comes (a session callable, as TF Serving's C++ session: no Python check of
# the declared shape).
_FRESH_PROCESS = r"""
import json, sys
import numpy as np
import tensorflow as tf
import tensorflow_text  # the SentencePiece ops, as TF Serving links them
from tensorflow.core.protobuf import config_pb2
assert "albert_tf" not in sys.modules
path = sys.argv[1]
rank1 = {"input_ids": [2, 10, 3], "input_mask": [1, 1, 1], "segment_ids": [0, 0, 0]}
messages = {}
model = tf.saved_model.load(path)
try:
  model.signatures["tokens"](**{k: tf.constant(v) for k, v in rank1.items()})
except tf.errors.InvalidArgumentError as e:
  messages["eager"] = e.message
try:
  model.signatures["serving_text_pair"](text=tf.constant(["a", "b"]),
                                        text_b=tf.constant(["c", "d", "e"]))
except tf.errors.InvalidArgumentError as e:
  messages["pair"] = e.message
with tf.compat.v1.Graph().as_default(), tf.compat.v1.Session() as session:
  meta = tf.compat.v1.saved_model.loader.load(session, ["serve"], path)
  signature = meta.signature_def["tokens"]
  names = sorted(rank1)
  callable_fn = session._make_callable_from_options(config_pb2.CallableOptions(
      feed=[signature.inputs[n].name for n in names],
      fetch=[signature.outputs["pooled_output"].name]))
  try:
    callable_fn(*[np.asarray(rank1[n], np.int32) for n in names])
  except tf.errors.InvalidArgumentError as e:
    messages["session"] = e.message
  good = callable_fn(*[np.asarray([rank1[n]], np.int32) for n in names])[0]
messages["session_good"] = good.tolist()
messages["eager_good"] = model.signatures["tokens"](
    **{k: tf.constant([v]) for k, v in rank1.items()})["pooled_output"].numpy().tolist()
print(json.dumps(messages))
"""


@pytest.mark.slow
def test_in_a_fresh_process_and_a_session(pretraining, tmp_path):
  script = tmp_path / "load.py"
  script.write_text(_FRESH_PROCESS)
  result = warm_binaries.run_python(
      [str(script), pretraining[2]], "bare", cwd=tmp_path, timeout=300,
      env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
  assert result.returncode == 0, result.stderr[-3000:]
  got = json.loads(result.stdout.strip().splitlines()[-1])
  for key in ("eager", "session"):
    assert "input_ids must be [batch, length] int32, got shape [3]" in got.get(key, ""), got
  assert "text and text_b must have the same batch size, got 2 and 3" in got["pair"]
  # The session found the weights (a Keras 3 model's, tracked as tf.Variables).
  np.testing.assert_allclose(got["session_good"], got["eager_good"], atol=1e-6)
  assert np.asarray(got["session_good"]).shape == (1, 32)
