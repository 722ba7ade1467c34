"""export_tfhub: TF Hub-format encoder (with `.mlm`) and preprocessing SavedModels, checked from a
client that knows only TF Hub's documented API (tests/tfhub_client.py, a subprocess that never
imports albert_tf) against the original's tokenizer ids and graph outputs and our model's; and
AlbertPreprocessor, the Keras 3 layer."""

import json
import os
import re

import keras
import numpy as np
import pytest
import tensorflow as tf
import tensorflow_text as tf_text

import albert_tf
from albert_tf.core import errors
from albert_tf.checkpoints import LoadReport, load_checkpoint
from albert_tf.core.settings import TokenizerSettings
from albert_tf.export.serving_ops import ops_missing_from
from albert_tf.export.tfhub import HubEncoder, check_mlm_head, save_hub_model
from albert_tf.export.tfhub_preprocessing import HubPreprocessor
from albert_tf.tokenization.bert_packing import bert_pack_inputs
from helpers import ORIGINAL_MODEL, REPO_ROOT, TESTDATA, reference_batch, run_binary
import warm_binaries

CONFIG = os.path.join(ORIGINAL_MODEL, "albert_config.json")
CKPT0 = os.path.join(ORIGINAL_MODEL, "model.ckpt-0")
SPM = os.path.join(TESTDATA, "original_pretraining_data", "30k-clean-tiny.model")
VOCAB = os.path.join(TESTDATA, "original_wordpiece", "vocab.txt")
ALLOWLIST = os.path.join(TESTDATA, "serving_ops_tf2.12.txt")
SEQ = 32  # the preprocessors' default_seq_length
PAIR_SEQ = 16  # short enough that most pairs are trimmed
ENCODER_INPUTS = ("input_word_ids", "input_mask", "input_type_ids")


def _lines(path, count):
  """The first `count` fixture lines and the last 6 (the awkward ones), leaving out runs of one
  repeated character: tensorflow-text's SentencePiece breaks ties there in another order
  (test_in_graph_tokenizer.py)."""
  with open(path, encoding="utf-8") as f:
    lines = [json.loads(line) for line in f]
  return [l for l in lines[:count] + lines[-6:] if not re.search(r"(.)\1\1", l["text"])]


SP_LINES = _lines(os.path.join(TESTDATA, "original_pretraining_data", "tokenization.jsonl"), 24)
WP_LINES = _lines(os.path.join(TESTDATA, "original_wordpiece", "tokenization_lower.jsonl"), 24)
PAIRS = [(SP_LINES[i]["text"], SP_LINES[-1 - i]["text"]) for i in range(8)] + [("a", "")]


def _ragged(out, name):
  splits = sorted(k for k in out if k.startswith(f"{name}.splits"))
  return tf.RaggedTensor.from_nested_row_splits(out[f"{name}.values"],
                                                [out[k] for k in splits]).to_list()


def _reference_pack(segments, seq_length):
  """tensorflow-text's own BertPackInputs steps (its RoundRobinTrim op, which TF Serving 2.12
  lacks, is fine for a reference)."""
  segments = [s.merge_dims(1, -1) if s.ragged_rank > 1 else s for s in segments]
  trimmed = tf_text.RoundRobinTrimmer(seq_length - len(segments) - 1).trim(segments)
  ids, types = tf_text.combine_segments(trimmed, 2, 3)
  word_ids, mask = tf_text.pad_model_inputs(ids, seq_length, 0)
  type_ids, _ = tf_text.pad_model_inputs(types, seq_length, 0)
  return {"input_word_ids": word_ids.numpy(), "input_mask": mask.numpy(),
          "input_type_ids": type_ids.numpy()}


@pytest.fixture(scope="module")
def pretrainer():
  model = albert_tf.AlbertPretrainer(albert_tf.AlbertConfig.from_json_file(CONFIG))
  load_checkpoint(model, CKPT0)
  return model


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
  """The encoder with .mlm (the binary, from the released-layout checkpoint), the SentencePiece
  and WordPiece preprocessors, and what the client got from them: (paths, client outputs)."""
  root = tmp_path_factory.mktemp("tfhub")
  paths = {"encoder": str(root / "encoder"), "preprocessor": str(root / "preprocess"),
           "wordpiece_preprocessor": str(root / "preprocess_wordpiece")}
  # The SentencePiece preprocessor from the binary too (--export_type=preprocessing takes no
  # config), the WordPiece one made here.
  stdout = run_binary("export_tfhub", [
      "--export_type=model_with_mlm", f"--albert_config_file={CONFIG}",
      f"--init_checkpoint={CKPT0}", f"--spm_model_file={SPM}",
      f"--export_path={paths['encoder']}"]).stdout
  run_binary("export_tfhub", ["--export_type=preprocessing", f"--spm_model_file={SPM}",
                              f"--default_seq_length={SEQ}",
                              f"--export_path={paths['preprocessor']}"])
  save_hub_model(HubPreprocessor(TokenizerSettings(vocab_file=VOCAB), default_seq_length=SEQ),
                 paths["wordpiece_preprocessor"])
  assert os.path.isfile(os.path.join(paths["preprocessor"], "saved_model.pb"))
  assert "loaded 32 variables" in stdout and "missing 0" in stdout, stdout
  batch = reference_batch()
  request = {
      "texts": [l["text"] for l in SP_LINES], "pairs": PAIRS, "pair_seq_length": PAIR_SEQ,
      "wordpiece_texts": [l["text"] for l in WP_LINES],
      "features": {"input_word_ids": batch["input_ids"].tolist(),
                   "input_mask": batch["input_mask"].tolist(),
                   "input_type_ids": batch["segment_ids"].tolist(),
                   "masked_lm_positions": batch["masked_lm_positions"].tolist()}}
  with open(root / "request.json", "w", encoding="utf-8") as f:
    json.dump(request, f)
  output = root / "client.npz"
  result = warm_binaries.run_python(
      [os.path.join(REPO_ROOT, "tests", "tfhub_client.py"),
       f"--request={root / 'request.json'}", f"--output={output}"]
      + [f"--{name}={path}" for name, path in paths.items()],
      "bare", cwd=root, timeout=600)
  assert result.returncode == 0, result.stderr[-3000:]
  return paths, dict(np.load(output))


@pytest.mark.slow
def test_the_client_never_imports_albert_tf(exported):
  assert not exported[1]["albert_tf_imported"]


@pytest.mark.slow
def test_tokenize_gives_the_original_tokenizers_ids(exported):
  out = exported[1]
  assert _ragged(out, "tokens") == [l["ids"] for l in SP_LINES]
  special = dict(zip(out["special_names"], out["special_values"]))
  assert special == {"vocab_size": 1000, "padding_id": 0, "start_of_sequence_id": 2,
                     "end_of_segment_id": 3, "mask_id": 4}
  # The root call: [CLS] ids [SEP], cut to SEQ, padded.
  for row, line in enumerate(SP_LINES):
    ids = [2] + line["ids"][:SEQ - 2] + [3]
    assert out["packed.input_word_ids"][row].tolist() == ids + [0] * (SEQ - len(ids))
    assert out["packed.input_mask"][row].tolist() == [1] * len(ids) + [0] * (SEQ - len(ids))
  assert not out["packed.input_type_ids"].any()
  assert (out["tfsm_packed.input_word_ids"] == out["packed.input_word_ids"]).all()


@pytest.mark.slow
def test_wordpiece_tokenize_gives_words_of_the_original_pieces(exported):
  out = exported[1]
  words = _ragged(out, "wordpiece_tokens")
  assert [sum(w, []) for w in words] == [l["ids"] for l in WP_LINES]
  # A word is its first piece and its "##" continuations.
  assert [len(w) for w in words] == [sum(not t.startswith("##") for t in l["tokens"])
                                     for l in WP_LINES]
  expected = _reference_pack([tf.ragged.constant(words, tf.int32)] * 2, SEQ)
  for name in ENCODER_INPUTS:
    np.testing.assert_array_equal(out[f"wordpiece_pairs.{name}"], expected[name])


@pytest.mark.slow
def test_bert_pack_inputs_trims_round_robin(exported):
  out = exported[1]
  a, b = _ragged(out, "pair_tokens_a"), _ragged(out, "pair_tokens_b")
  lines = {l["text"]: l["ids"] for l in SP_LINES}
  assert a[:-1] == [lines[x] for x, _ in PAIRS[:-1]] and len(a[-1]) == 1 and b[-1] == []
  expected = _reference_pack([tf.ragged.constant(a, tf.int32), tf.ragged.constant(b, tf.int32)],
                             PAIR_SEQ)
  for name in ENCODER_INPUTS:
    np.testing.assert_array_equal(out[f"pairs.{name}"], expected[name])
  assert sum(len(x) + len(y) > PAIR_SEQ - 3 for x, y in zip(a, b)) >= 6  # most were trimmed
  # An empty second segment keeps its [SEP] (type 1), as BertPackInputs.
  assert out["pairs.input_word_ids"][-1][:4].tolist() == [2, a[-1][0], 3, 3]
  assert out["pairs.input_type_ids"][-1][:4].tolist() == [0, 0, 0, 1]


@pytest.mark.slow
def test_encoder_outputs_match_the_original_graph_and_our_model(exported, pretrainer):
  out = exported[1]
  batch = reference_batch()
  ours = pretrainer({"input_ids": batch["input_ids"], "input_mask": batch["input_mask"],
                     "segment_ids": batch["segment_ids"],
                     "masked_lm_positions": batch["masked_lm_positions"]})
  assert out["keys"].tolist() == ["default", "encoder_outputs", "pooled_output",
                                  "sequence_output"]
  for name in ("pooled_output", "sequence_output"):
    np.testing.assert_allclose(out[name], batch[name], atol=1e-5)
    np.testing.assert_allclose(out[name], ours[name], atol=1e-5)
  np.testing.assert_array_equal(out["default"], out["pooled_output"])
  assert out["encoder_outputs"].shape == (3, 3, 24, 32)  # num_hidden_layers of them
  np.testing.assert_allclose(out["encoder_outputs"], batch["all_encoder_layers"], atol=1e-5)
  np.testing.assert_array_equal(out["encoder_outputs"][-1], out["sequence_output"])
  np.testing.assert_allclose(out["signature_pooled_output"], out["pooled_output"], atol=1e-6)
  assert out["signature_keys"].tolist() == [
      "default", "encoder_outputs_0", "encoder_outputs_1", "encoder_outputs_2", "pooled_output",
      "sequence_output"]
  # .mlm: our pretrainer's MLM logits, whose log-softmax is the original's log-probabilities.
  np.testing.assert_allclose(out["mlm_logits"], ours["masked_lm_logits"], atol=1e-5)
  log_probs = tf.nn.log_softmax(out["mlm_logits"]).numpy().reshape(15, -1)
  np.testing.assert_allclose(log_probs, batch["masked_lm_log_probs"], atol=1e-5)
  np.testing.assert_allclose(out["mlm_sequence_output"], out["sequence_output"], atol=1e-6)
  encoder_count = len(pretrainer.encoder.trainable_variables)
  assert out["trainable_variables"] == out["variables"] == encoder_count == 25
  assert out["mlm_trainable_variables"] == len(pretrainer.masked_lm.trainable_variables) + 25


@pytest.mark.slow
def test_text_through_both_models_matches_our_model(exported, pretrainer):
  out = exported[1]
  ids = [[2] + l["ids"][:SEQ - 2] + [3] for l in SP_LINES]
  features = {"input_ids": np.array([x + [0] * (SEQ - len(x)) for x in ids], np.int32),
              "input_mask": np.array([[1] * len(x) + [0] * (SEQ - len(x)) for x in ids],
                                     np.int32)}
  ours = pretrainer.encoder(features)["pooled_output"]
  np.testing.assert_allclose(out["text_pooled_output"], ours, atol=1e-5)


@pytest.mark.slow
def test_keras_layer_fine_tunes_and_tfsm_layer_serves(exported):
  out = exported[1]
  norms = out["keras_layer_gradient_norms"]
  assert len(norms) == 25 and (norms > 0).all(), norms
  # Dropout is 0 in the fixture config, so training=True gives the inference outputs.
  np.testing.assert_allclose(out["keras_layer_pooled_output"], out["pooled_output"], atol=1e-6)
  np.testing.assert_allclose(out["tfsm_pooled_output"], out["pooled_output"], atol=1e-6)
  np.testing.assert_allclose(out["tfsm_sequence_output"], out["sequence_output"], atol=1e-6)


@pytest.mark.slow
def test_exports_use_only_ops_that_serving_2_12_registers(exported):
  paths = exported[0]
  for path in paths.values():
    assert ops_missing_from(path, ALLOWLIST) == [], path
  assert sorted(os.listdir(paths["encoder"])) == ["assets", "fingerprint.pb", "saved_model.pb",
                                                  "variables"]
  assert os.listdir(os.path.join(paths["encoder"], "assets")) == ["30k-clean-tiny.model"]
  assert os.listdir(os.path.join(paths["wordpiece_preprocessor"], "assets")) == ["vocab.txt"]


@pytest.mark.slow
def test_preprocessor_layer_makes_two_line_keras_models(exported, pretrainer, tmp_path):
  paths, out = exported
  texts = np.array([l["text"] for l in SP_LINES])
  text = keras.Input(shape=(), dtype="string")
  encoder = keras.layers.TFSMLayer(paths["encoder"], call_endpoint="serving_default")
  model = keras.Model(text, encoder(albert_tf.AlbertPreprocessor(SPM, seq_length=SEQ)(text)))
  np.testing.assert_allclose(model(texts)["pooled_output"], out["text_pooled_output"], atol=1e-6)
  ours = keras.Model(text, pretrainer.encoder(
      albert_tf.AlbertPreprocessor(SPM, seq_length=SEQ, names="albert")(text)))
  np.testing.assert_allclose(ours(texts)["pooled_output"], out["text_pooled_output"], atol=1e-5)
  # Saved and loaded as our other Keras classes.
  ours.save(tmp_path / "m.keras")
  loaded = keras.models.load_model(tmp_path / "m.keras")
  np.testing.assert_allclose(loaded(texts)["pooled_output"], out["text_pooled_output"],
                             atol=1e-5)


def test_preprocessor_layer_packs_pairs_as_bert_pack_inputs():
  layer = albert_tf.AlbertPreprocessor(vocab_file=VOCAB, seq_length=12)
  texts = [[l["text"] for l in WP_LINES[:4]], [l["text"] for l in WP_LINES[4:8]]]
  got = layer([tf.constant(t) for t in texts])
  segments = [tf.ragged.constant([l["ids"] for l in WP_LINES[k:k + 4]], tf.int32)
              for k in (0, 4)]
  expected = _reference_pack(segments, 12)
  for name in ENCODER_INPUTS:
    np.testing.assert_array_equal(got[name], expected[name])
  assert keras.saving.deserialize_keras_object(
      keras.saving.serialize_keras_object(layer)).get_config() == layer.get_config()


def test_pack_matches_tensorflow_texts_round_robin_trimmer():
  rng = np.random.RandomState(0)
  for _ in range(10):
    lengths = rng.randint(0, 12, (2, 6))
    a, b = (tf.ragged.constant([list(rng.randint(5, 99, n)) for n in row], tf.int32,
                               ragged_rank=1) for row in lengths)
    seq_length = int(rng.randint(3, 20))
    for segments in ([a], [a, b]):
      got = bert_pack_inputs(segments, seq_length, 2, 3, 0)
      expected = _reference_pack(segments, seq_length)
      for name in ENCODER_INPUTS:
        np.testing.assert_array_equal(got[name], expected[name])


def test_encoder_outputs_are_each_layers_last_block():
  config = albert_tf.AlbertConfig.from_json_file(CONFIG)
  config.inner_group_num, config.num_hidden_layers = 2, 2
  model = albert_tf.AlbertModel(config)
  root = HubEncoder(model, TokenizerSettings(spm_model_file=SPM))
  ids = np.array([[2, 40, 50, 3, 0]], np.int32)
  features = {"input_word_ids": ids, "input_mask": (ids > 0).astype(np.int32),
              "input_type_ids": np.zeros_like(ids)}
  got = root.__call__(features)
  blocks = model({"input_ids": ids, "input_mask": features["input_mask"]})["encoder_outputs"]
  assert len(blocks) == 4 and len(got["encoder_outputs"]) == 2
  for layer, block in zip(got["encoder_outputs"], (blocks[1], blocks[3])):
    np.testing.assert_allclose(layer, block, atol=1e-6)
  np.testing.assert_array_equal(got["encoder_outputs"][-1], got["sequence_output"])


def test_model_with_mlm_refuses_a_checkpoint_without_the_head():
  report = LoadReport("hf_qa", loaded=[], missing=["cls/predictions/output_bias"], unused=[])
  with pytest.raises(errors.CheckpointError, match="has no MLM head.*--export_type=model"):
    check_mlm_head(report, "hf_qa")


def test_export_path_that_holds_files_is_refused(tmp_path):
  (tmp_path / "other.txt").write_text("x")
  with pytest.raises(FileExistsError, match="not empty"):
    save_hub_model(tf.train.Checkpoint(), str(tmp_path))  # refused before the root is saved
