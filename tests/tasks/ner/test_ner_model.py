"""AlbertTokenClassifier: transformers' AlbertForTokenClassification logits from its checkpoint
(tests/testdata/hf_albert_tagging, every parameter perturbed), Keras serialisation, and the
released, our and Hugging Face layouts both ways."""

import json
import os

import keras
import numpy as np
import pytest
import safetensors.numpy
import tensorflow as tf

import albert_tf
from albert_tf.checkpoints import hf, hf_config, load_checkpoint, save_original_checkpoint
from albert_tf.export.hf import export_hf_layout
from albert_tf.checkpoints.labels import write_label_file
from albert_tf.tasks.ner.model import AlbertTokenClassifier
from albert_tf.tasks.ner.objective import TokenClassificationObjective

from helpers import TESTDATA, read_tf1_checkpoint

HF_DIR = os.path.join(TESTDATA, "hf_albert_tagging", "token_classifier")
REFERENCE = os.path.join(TESTDATA, "hf_albert_tagging", "reference.npz")


@pytest.fixture(scope="module")
def reference():
  return dict(np.load(REFERENCE))


@pytest.fixture(scope="module")
def hf_model():
  config = hf_config.from_hf_config(HF_DIR)
  model = AlbertTokenClassifier(config, num_labels=9)
  report = load_checkpoint(model, HF_DIR)
  assert sorted(report.missing) == ["bert/pooler/dense/bias", "bert/pooler/dense/kernel"]
  assert not report.unused
  return model


def _logits(model, reference):
  return model({"input_ids": reference["input_ids"], "input_mask": reference["attention_mask"],
                "segment_ids": reference["token_type_ids"]})["logits"].numpy()


def test_hf_token_classifier_logits_equal_transformers(hf_model, reference):
  logits = _logits(hf_model, reference)
  assert logits.shape == (3, 14, 9)
  real = reference["attention_mask"].astype(bool)
  np.testing.assert_allclose(logits[real], reference["token_classifier_logits"][real], atol=1e-4)


def test_hf_export_matches_the_fixture_files(hf_model, tmp_path):
  names = [json.load(open(os.path.join(HF_DIR, "config.json")))["id2label"][str(i)]
           for i in range(9)]
  model = AlbertTokenClassifier(hf_model.config, label_names=names)
  model.set_weights(hf_model.get_weights())
  hf.save_hf_checkpoint(model, str(tmp_path), os.path.join(HF_DIR, "spiece.model"))
  ours = safetensors.numpy.load_file(str(tmp_path / "model.safetensors"))
  theirs = safetensors.numpy.load_file(os.path.join(HF_DIR, "model.safetensors"))
  assert {k: (v.shape, v.dtype) for k, v in ours.items()} == {
      k: (v.shape, v.dtype) for k, v in theirs.items()}
  for key in theirs:
    np.testing.assert_allclose(ours[key], theirs[key], atol=1e-7, err_msg=key)
  config = json.load(open(tmp_path / "config.json"))
  given = json.load(open(os.path.join(HF_DIR, "config.json")))
  for key in ("architectures", "id2label", "label2id", "hidden_size", "embedding_size",
              "num_hidden_layers", "hidden_act", "vocab_size", "model_type"):
    assert config[key] == given[key], key


def test_keras_file_round_trip_keeps_label_names(hf_model, reference, tmp_path):
  model = AlbertTokenClassifier(hf_model.config, label_names=[f"T{i}" for i in range(9)])
  model.set_weights(hf_model.get_weights())
  model.save(str(tmp_path / "tagger.keras"))
  loaded = keras.models.load_model(str(tmp_path / "tagger.keras"))
  assert type(loaded) is AlbertTokenClassifier and loaded.label_names == model.label_names
  np.testing.assert_array_equal(_logits(loaded, reference), _logits(model, reference))
  serialized = keras.saving.serialize_keras_object(model)
  assert serialized["registered_name"] == "albert_tf>AlbertTokenClassifier"
  assert albert_tf.AlbertTokenClassifier is AlbertTokenClassifier


def test_released_layout_round_trip_and_hf_export_of_a_run_ner_dir(hf_model, reference,
                                                                   tmp_path):
  prefix = str(tmp_path / "model.ckpt-best")
  save_original_checkpoint(hf_model, prefix, global_step=7, update_checkpoint_state=False)
  tensors = read_tf1_checkpoint(prefix)
  assert tensors["output_weights"].shape == (9, 32) and tensors["output_bias"].shape == (9,)
  assert all(n.startswith("bert/") for n in tensors
             if n not in ("output_weights", "output_bias", "global_step"))
  back = AlbertTokenClassifier(hf_model.config, num_labels=9)
  load_checkpoint(back, prefix)
  np.testing.assert_array_equal(_logits(back, reference), _logits(hf_model, reference))
  # run_ner's output_dir: the checkpoint plus label_list.txt -> AlbertForTokenClassification.
  tags = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC", "B-ORG", "I-ORG", "B-MISC", "I-MISC"]
  write_label_file(str(tmp_path), tags)
  out = export_hf_layout(hf_model.config, prefix, str(tmp_path / "hf"))
  config = json.load(open(os.path.join(out, "config.json")))
  assert config["architectures"] == ["AlbertForTokenClassification"]
  assert config["id2label"] == {str(i): t for i, t in enumerate(tags)}
  again = AlbertTokenClassifier(hf_config.from_hf_config(out), num_labels=9)
  load_checkpoint(again, out)
  np.testing.assert_allclose(_logits(again, reference), _logits(hf_model, reference), atol=1e-6)


def test_loss_is_the_mean_over_labelled_positions():
  logits = tf.constant(np.random.default_rng(0).normal(size=(2, 4, 3)), tf.float32)
  labels = tf.constant([[0, 2, 1, 0], [1, 1, 0, 0]])
  weights = tf.constant([[0, 1, 1, 0], [0, 1, 0, 0]])
  objective = TokenClassificationObjective()
  features = {"label_ids": labels, "label_weights": weights}
  sums = objective.sums({"logits": logits}, features)
  loss = objective.loss(sums, objective.totals(features))
  log_probs = tf.nn.log_softmax(logits).numpy()
  expected = -(log_probs[0, 1, 2] + log_probs[0, 2, 1] + log_probs[1, 1, 1]) / 3
  assert float(loss) == pytest.approx(expected, abs=1e-6)
  with pytest.raises(ValueError, match="label_names"):
    AlbertTokenClassifier(albert_tf.AlbertConfig(vocab_size=10), num_labels=3,
                          label_names=["O"])


def test_docstring_example_runs():
  import doctest
  from albert_tf.tasks.ner import model
  result = doctest.testmod(model)
  assert result.attempted and not result.failed
