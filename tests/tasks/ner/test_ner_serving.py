"""The NER SavedModel: its raw-text signature gives the Python features' predictions (the model's
argmax at each word's first piece, in its max-context window) on the fixture test set, in a
process that does not import albert_tf; outputs do not depend on the batch (per-request length);
only TF Serving 2.12's ops."""

import json
import os

import numpy as np
import pytest
import tensorflow as tf

import albert_tf
from albert_tf.export.serving_ops import ops_missing_from
from albert_tf.core.settings import TokenizerSettings
from albert_tf.tasks.ner.data import read_conll
from albert_tf.tasks.ner.export import (LABEL_LIST_FILE, NerServingModule, check_label_names,
                                        export_ner_saved_model, serving_copy)
from albert_tf.tasks.ner.features import sentence_features
from albert_tf.tasks.ner.model import AlbertTokenClassifier
from albert_tf.tokenization import FullTokenizer
from helpers import ORIGINAL_MODEL, TESTDATA, run_binary
import warm_binaries

CONFIG = os.path.join(ORIGINAL_MODEL, "albert_config.json")  # H 32, 3 layers, 64 positions
SPM = os.path.join(TESTDATA, "original_pretraining_data", "30k-clean-tiny.model")
NER_TEST = os.path.join(TESTDATA, "ner", "test.txt")
HF_TAGGER = os.path.join(TESTDATA, "hf_albert_tagging", "token_classifier")  # 9 labels, H 32
ALLOWLIST = os.path.join(TESTDATA, "serving_ops_tf2.12.txt")
VOCAB = os.path.join(TESTDATA, "original_wordpiece", "vocab.txt")  # 1,155 WordPiece entries
LABELS = ["O", "B-LOC", "B-MISC", "B-ORG", "B-PER", "I-LOC", "I-MISC", "I-ORG", "I-PER"]
T = 32  # the fixture's first sentences have 141 to 164 words: several windows each
DOC_STRIDE = 16  # windows overlap, so max-context decides

# Runs in a fresh interpreter with TensorFlow and tensorflow-text only, as a TF Serving client
# would: serving_default over the sentences in batches of 16, and the label names (the asset's
# and tokenization_info's).
SERVED_LABELS = """
import json, sys
import tensorflow as tf
import tensorflow_text  # registers the tokenizer's ops
model = tf.saved_model.load(sys.argv[1])
with open(sys.argv[2], encoding="utf-8") as f:
  sentences = json.load(f)
serve = model.signatures["serving_default"]
labels = []
for begin in range(0, len(sentences), 16):
  out = serve(text=tf.constant(sentences[begin:begin + 16]))
  for row, count in zip(out["labels"].numpy(), out["word_count"].numpy()):
    labels.append([label.decode() for label in row[:count]])
info = model.signatures["tokenization_info"]()
with open(info["label_list"].numpy().decode(), encoding="utf-8") as f:
  label_list = f.read().splitlines()
assert "albert_tf" not in sys.modules, "the client imported albert_tf"
with open(sys.argv[3], "w", encoding="utf-8") as f:
  json.dump({"labels": labels, "label_list": label_list,
             "label_names": [n.decode() for n in info["label_names"].numpy()],
             "doc_stride": int(info["doc_stride"])}, f)
"""


def _tagger(**config_changes):
  """A token classifier of the fixture config with fixed random weights, spread so that words
  get many labels (an initialised head gives nearly one label everywhere)."""
  config = albert_tf.AlbertConfig.from_json_file(CONFIG)
  for name, value in config_changes.items():
    setattr(config, name, value)
  model = AlbertTokenClassifier(config, num_labels=len(LABELS))
  # Fixed without keras.utils.set_random_seed: seeding clears TensorFlow's eager kernel cache,
  # which deletes the SentencePiece resource of every module already made (tensorflow-text
  # makes it in an eager kernel). Constant weights (LayerNorm, biases) keep their value.
  rng = np.random.default_rng(0)
  model.set_weights([
      (w if np.all(w == w.flat[0]) else rng.normal(0.0, 0.02, w.shape)).astype(w.dtype)
      + rng.normal(0.0, 0.02, w.shape).astype(w.dtype) for w in model.get_weights()])
  return model


def _sentences():
  return read_conll(NER_TEST)


def _python_predictions(model, sentences, tokenizer):
  """The Python path's labels: the NER features' windows through the model, each word's argmax
  read where the features put its word_index (its first piece, in its max-context window)."""
  predictions = []
  for sentence in sentences:
    features = sentence_features(tokenizer, sentence, LABELS, T, DOC_STRIDE)
    batch = {name: np.array([f[name] for f in features], np.int32)
             for name in ("input_ids", "input_mask", "segment_ids")}
    logits = model(batch, training=False)["logits"].numpy()
    word_index = np.array([f["word_index"] for f in features])
    labels = [None] * len(sentence.words)
    for window, column in zip(*np.nonzero(word_index >= 0)):
      assert labels[word_index[window, column]] is None, "a word predicted twice"
      labels[word_index[window, column]] = LABELS[int(np.argmax(logits[window, column]))]
    assert None not in labels, "a word without a prediction"
    predictions.append(labels)
  return predictions


@pytest.fixture(scope="module")
def tagger():
  return _tagger()


@pytest.fixture(scope="module")
def label_file(tmp_path_factory):
  path = tmp_path_factory.mktemp("labels") / LABEL_LIST_FILE
  path.write_text("".join(f"{name}\n" for name in LABELS), encoding="utf-8")
  return str(path)


@pytest.fixture(scope="module")
def module(tagger, label_file):
  return NerServingModule(tagger, LABELS, label_file, TokenizerSettings(spm_model_file=SPM),
                          max_seq_length=T, doc_stride=DOC_STRIDE)


def _served_labels(serve, sentences):
  """The raw-text signature's label names of each sentence, cut to its word count.

  Args:
    serve: the signature (a module's serve_text, or a loaded serving_default).
    sentences: data.Sentence list.
  """
  out = serve(text=tf.constant([" ".join(s.words) for s in sentences]))
  return [[label.decode() for label in row[:count]]
          for row, count in zip(out["labels"].numpy(), out["word_count"].numpy())]


def _serve_without_albert_tf(version, sentences, tmp_path):
  """SERVED_LABELS's answer ({"labels": per sentence, "label_list", "label_names"}) for the
  SavedModel at `version`, run without albert_tf (a child of the bare warm server)."""
  texts = tmp_path / "sentences.json"
  texts.write_text(json.dumps([" ".join(s.words) for s in sentences]), encoding="utf-8")
  result = tmp_path / "served.json"
  run = warm_binaries.run_python(["-c", SERVED_LABELS, version, str(texts), str(result)], "bare",
                                 cwd=tmp_path, timeout=300)
  assert run.returncode == 0, run.stderr[-3000:]
  return json.loads(result.read_text(encoding="utf-8"))


@pytest.mark.slow
def test_saved_model_labels_equal_the_python_features_predictions(tagger, tmp_path):
  """Overlapping windows (doc_stride 16 of 30 pieces): max-context decides each word's window."""
  sentences = _sentences()
  assert max(len(s.words) for s in sentences[:3]) > 120  # several windows each
  version = export_ner_saved_model(tagger, LABELS, TokenizerSettings(spm_model_file=SPM), T,
                                   tmp_path / "export", doc_stride=DOC_STRIDE)
  assert os.path.dirname(version) == str(tmp_path / "export")
  assert os.listdir(tmp_path / "export") == [os.path.basename(version)]  # no staging left
  with open(os.path.join(version, "assets", LABEL_LIST_FILE), encoding="utf-8") as f:
    assert f.read().splitlines() == LABELS
  assert ops_missing_from(version, ALLOWLIST) == []
  loaded = tf.saved_model.load(version)
  info = loaded.signatures["tokenization_info"]()
  assert [n.decode() for n in info["label_names"].numpy()] == LABELS
  assert int(info["doc_stride"]) == DOC_STRIDE and int(info["max_seq_length"]) == T
  served = _served_labels(loaded.signatures["serving_default"], sentences)
  expected = _python_predictions(tagger, sentences, FullTokenizer(spm_model_file=SPM))
  assert [len(labels) for labels in served] == [len(s.words) for s in sentences]
  # Argmaxes of two graphs (the SavedModel's and eager windows), whose kernels may differ per CPU
  # by ~1e-7: exact label equality holds as no word is a near-tie. Measured: the smallest gap
  # between a word's two best logits is 3.6e-5 (of 2,074 words; logits |x| <= 0.53).
  assert served == expected
  assert len({label for labels in expected for label in labels}) > 3  # not one label everywhere


@pytest.mark.slow
def test_served_labels_equal_run_ners_predictions_without_albert_tf(tmp_path):
  """The acceptance check: run_ner (the HF fixture tagger, no training) writes
  test_predictions.txt and exports; a client importing only TensorFlow and tensorflow-text gets
  the same label for every word of the test set."""
  run_binary("run_ner", [
      f"--data_dir={os.path.dirname(NER_TEST)}", f"--output_dir={tmp_path / 'run'}",
      f"--init_checkpoint={HF_TAGGER}", f"--max_seq_length={T}", f"--doc_stride={DOC_STRIDE}",
      "--do_predict",
      "--predict_batch_size=32", f"--export_dir={tmp_path / 'export'}"])
  with open(tmp_path / "run" / "test_predictions.txt", encoding="utf-8") as f:
    predicted = [[line.split(" ")[-1] for line in block.splitlines()]
                 for block in f.read().split("\n\n") if block.strip()]
  [version] = os.listdir(tmp_path / "export")
  sentences = _sentences()
  served = _serve_without_albert_tf(str(tmp_path / "export" / version), sentences, tmp_path)
  with open(tmp_path / "run" / LABEL_LIST_FILE, encoding="utf-8") as f:
    assert served["label_list"] == served["label_names"] == f.read().splitlines()
  assert served["doc_stride"] == DOC_STRIDE  # the run's windows, not the default
  assert [len(labels) for labels in served["labels"]] == [len(s.words) for s in sentences]
  assert served["labels"] == predicted
  assert len({label for labels in predicted for label in labels}) > 3


@pytest.mark.slow
def test_outputs_do_not_depend_on_the_batch(module):
  sentences = [" ".join(s.words) for s in _sentences()]
  short, long = sentences[3], sentences[0]
  alone = module.serve_text(tf.constant([short]))
  mixed = module.serve_text(tf.constant([short, long, ""]))
  count = int(alone["word_count"][0])
  assert count == len(short.split()) and mixed["word_count"].numpy().tolist() == [
      count, len(long.split()), 0]
  # The short request alone ran on fewer than T positions; with the long one, on all T. Labels
  # are argmaxes of two batch shapes' kernels: equal as no word is a near-tie (see above).
  np.testing.assert_array_equal(mixed["label_ids"][0, :count], alone["label_ids"][0])
  np.testing.assert_array_equal(mixed["labels"][0, :count], alone["labels"][0])
  np.testing.assert_allclose(mixed["probabilities"][0, :count], alone["probabilities"][0],
                             atol=1e-5)
  # Padding past each sentence's words.
  assert (mixed["label_ids"][0, count:] == -1).numpy().all()
  assert (mixed["labels"][2] == b"").numpy().all()
  labels = alone["labels"].numpy()[0]
  ids = alone["label_ids"].numpy()[0]
  assert [LABELS[i] for i in ids] == [label.decode() for label in labels]
  assert ((alone["probabilities"] > 0) & (alone["probabilities"] <= 1)).numpy().all()


@pytest.mark.slow
def test_tokens_signature_gives_the_models_logits(module, tagger):
  ids = tf.constant([[2, 10, 11, 3, 0, 0], [2, 12, 3, 0, 0, 0]], tf.int32)
  mask = tf.cast(ids > 0, tf.int32)
  features = {"input_ids": ids, "input_mask": mask, "segment_ids": tf.zeros_like(ids)}
  out = module.tokens(**features)
  expected = tagger(features, training=False)["logits"]
  assert out["logits"].shape == (2, 6, len(LABELS))
  np.testing.assert_allclose(out["logits"], expected, atol=1e-6)
  np.testing.assert_allclose(tf.reduce_sum(out["probabilities"], -1), np.ones([2, 6]), atol=1e-5)
  with pytest.raises(tf.errors.InvalidArgumentError, match="segment_ids must have the shape"):
    module.tokens(input_ids=ids, input_mask=mask, segment_ids=ids[:1])


@pytest.mark.slow
def test_empty_batch_and_empty_words(module):
  out = module.serve_text(tf.zeros([0], tf.string))
  assert all(value.shape[0] == 0 for value in out.values())
  # A word giving no SentencePiece piece (only a combining mark) still gets its label.
  out = module.serve_text(tf.constant(["Paris \u0301 is"]))
  assert out["word_count"].numpy().tolist() == [3] and (out["label_ids"] >= 0).numpy().all()


def test_label_names_must_match_the_logits():
  with pytest.raises(ValueError, match="label_names has 2 names but the model gives 3"):
    check_label_names(["O", "B-PER"], 3)
  with pytest.raises(ValueError, match="distinct"):
    check_label_names(["O", "O"], 2)


@pytest.mark.slow
def test_wordpiece_labels_equal_the_python_predictions(label_file):
  """A WordPiece vocab.txt (no SentencePiece model): the same features in the graph."""
  tagger = _tagger(vocab_size=1155)
  module = NerServingModule(tagger, LABELS, label_file, TokenizerSettings(vocab_file=VOCAB),
                            max_seq_length=T, doc_stride=DOC_STRIDE)
  sentences = _sentences()[:8]  # three of several windows
  expected = _python_predictions(tagger, sentences, FullTokenizer(vocab_file=VOCAB))
  assert _served_labels(module.serve_text, sentences) == expected


@pytest.mark.slow
def test_bfloat16_serving_answers_in_float32_close_to_float32(tagger, module, label_file):
  bf16 = serving_copy(tagger, "bfloat16")
  assert bf16.dtype_policy.name == "bfloat16" and serving_copy(tagger, "float32") is tagger
  # Weights held in bfloat16 (no cast at each read), LayerNorm's kept float32.
  dtypes = {w.path: w.dtype for w in bf16.weights}
  assert {d for p, d in dtypes.items() if "LayerNorm" not in p} == {"bfloat16"}
  assert {d for p, d in dtypes.items() if "LayerNorm" in p} == {"float32"}
  texts = tf.constant([" ".join(s.words) for s in _sentences()[:8]])
  reference = module.serve_text(texts)
  # Held: a module's tf.functions keep only a weak reference to it (and its tokenizer).
  bf16_module = NerServingModule(bf16, LABELS, label_file, TokenizerSettings(spm_model_file=SPM),
                                 max_seq_length=T, doc_stride=DOC_STRIDE)
  served = bf16_module.serve_text(texts)
  assert served["probabilities"].dtype == tf.float32
  words = reference["label_ids"].numpy() >= 0
  agree = (served["label_ids"].numpy() == reference["label_ids"].numpy())[words].mean()
  # Measured: 99% of the labels, probabilities within 6e-4 (bfloat16 keeps 8 mantissa bits).
  assert agree > 0.95
  assert np.abs(served["probabilities"].numpy() - reference["probabilities"].numpy()).max() < 0.02
