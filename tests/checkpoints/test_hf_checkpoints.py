"""Hugging Face checkpoints in and out: from transformers' files (tests/testdata/hf_albert, written
by transformers 5.23 with every parameter perturbed) our models compute transformers' outputs;
what we write has the fixture's keys, shapes and dtypes and reads back bit-identical."""

import json
import os

import numpy as np
import pytest
import safetensors.numpy

import albert_tf
from albert_tf.checkpoints import hf, hf_config
from albert_tf.export.hf import export_hf_layout
from albert_tf.tasks.classifier.model import AlbertClassifier
from albert_tf.models import AlbertModel, AlbertPretrainer
from albert_tf.tasks.race.model import AlbertMultipleChoice
from albert_tf.tasks.squad.model import AlbertSpanLabeler

from helpers import TESTDATA, run_binary
from served_model_helpers import load_served_model, run_signature

HF = os.path.join(TESTDATA, "hf_albert")
TOL = 1e-4


@pytest.fixture(scope="module")
def reference():
  return dict(np.load(os.path.join(HF, "reference.npz")))


def _config(folder="pretraining"):
  return hf_config.from_hf_config(os.path.join(HF, folder))


def _inputs(reference, **more):
  return dict(input_ids=reference["input_ids"], input_mask=reference["attention_mask"],
              segment_ids=reference["token_type_ids"], **more)


def _real(reference):
  return reference["attention_mask"].astype(bool)


def _keys(path):
  return {k: (v.shape, v.dtype) for k, v in safetensors.numpy.load_file(path).items()}


# ---- config ----------------------------------------------------------------------------------
def test_from_hf_config_maps_fields_and_keeps_head_settings():
  config = _config("classifier")
  assert (config.vocab_size, config.embedding_size, config.hidden_size) == (1000, 16, 32)
  assert config.hidden_act == "gelu"  # HF gelu_new: the original's tanh GELU
  assert config.extra["num_labels"] == 3
  assert config.extra["classifier_dropout_prob"] == 0.1
  back = hf_config.to_hf_config(config, "AlbertForSequenceClassification")
  given = json.loads(open(os.path.join(HF, "classifier", "config.json")).read())
  for key in ("vocab_size", "hidden_act", "layer_norm_eps", "id2label", "label2id",
              "classifier_dropout_prob", "architectures", "num_hidden_groups"):
    assert back[key] == given[key], key


@pytest.mark.parametrize("change, message", [
    ({"hidden_act": "gelu"}, "exact erf"),
    ({"layer_norm_eps": 1e-5}, "layer_norm_eps"),
])
def test_from_hf_config_rejects_what_the_original_cannot_express(tmp_path, change, message):
  values = json.loads(open(os.path.join(HF, "pretraining", "config.json")).read())
  values.update(change)
  (tmp_path / "config.json").write_text(json.dumps(values))
  with pytest.raises(ValueError, match=message):
    hf_config.from_hf_config(str(tmp_path))


# ---- import: every fixture model computes transformers' outputs -------------------------------
def test_pretraining(reference):
  model = AlbertPretrainer(_config())
  report = albert_tf.load_checkpoint(model, os.path.join(HF, "pretraining"))
  assert not report.missing and not report.unused
  batch, length = reference["input_ids"].shape
  positions = np.tile(np.arange(length, dtype=np.int32), (batch, 1))
  out = model(_inputs(reference, masked_lm_positions=positions))
  real = _real(reference)
  hidden = [out["embedding_output"]] + list(out["encoder_outputs"])
  # HF's hidden_states[0] is the projected embeddings.
  hidden[0] = model.encoder.embedding_projection(hidden[0])
  for layer, ours in enumerate(hidden):
    np.testing.assert_allclose(np.asarray(ours)[real],
                               reference["pretraining_hidden_states"][layer][real], atol=TOL)
  np.testing.assert_allclose(np.asarray(out["pooled_output"]),
                             reference["pretraining_pooler_output"], atol=TOL)
  np.testing.assert_allclose(np.asarray(out["masked_lm_logits"])[real],
                             reference["pretraining_prediction_logits"][real], atol=TOL)
  np.testing.assert_allclose(np.asarray(out["sentence_order_logits"]),
                             reference["pretraining_sop_logits"], atol=TOL)


@pytest.mark.parametrize("folder", ["encoder", "pretraining"])
def test_encoder(reference, folder):
  model = AlbertModel(_config(folder))
  report = albert_tf.load_checkpoint(model, os.path.join(HF, folder, hf.WEIGHTS_NAME))
  assert not report.missing
  assert bool(report.unused) == (folder == "pretraining")  # the heads
  out = model(_inputs(reference))
  np.testing.assert_allclose(np.asarray(out["sequence_output"])[_real(reference)],
                             reference[f"{folder}_last_hidden_state"][_real(reference)], atol=TOL)
  np.testing.assert_allclose(np.asarray(out["pooled_output"]),
                             reference[f"{folder}_pooler_output"], atol=TOL)


def test_classifier(reference):
  config = _config("classifier")
  model = AlbertClassifier(config, num_labels=config.extra["num_labels"])
  report = albert_tf.load_checkpoint(model, os.path.join(HF, "classifier"))
  assert not report.missing and not report.unused
  logits = model(_inputs(reference))["logits"]
  np.testing.assert_allclose(np.asarray(logits), reference["classifier_logits"], atol=TOL)


def test_span_labeler_without_pooler(reference):
  model = AlbertSpanLabeler(_config("qa"))
  report = albert_tf.load_checkpoint(model, os.path.join(HF, "qa"))
  assert report.missing == ["bert/pooler/dense/bias", "bert/pooler/dense/kernel"]
  assert not report.unused
  out = model(_inputs(reference))
  real = _real(reference)
  np.testing.assert_allclose(np.asarray(out["start_logits"])[real],
                             reference["qa_start_logits"][real], atol=TOL)
  np.testing.assert_allclose(np.asarray(out["end_logits"])[real],
                             reference["qa_end_logits"][real], atol=TOL)


def test_multiple_choice_takes_the_encoder_and_reports_its_head_missing():
  model = AlbertMultipleChoice(_config(), num_choices=2)
  report = albert_tf.load_checkpoint(model, os.path.join(HF, "pretraining"))
  assert report.missing == ["output_bias", "output_weights"]


# ---- clear errors ------------------------------------------------------------------------------
def test_shape_mismatch_is_named():
  model = AlbertClassifier(_config("classifier"), num_labels=2)
  with pytest.raises(ValueError, match="shape mismatch for output_weights"):
    albert_tf.load_checkpoint(model, os.path.join(HF, "classifier"))


def test_config_mismatch_names_the_absent_encoder_weights():
  model = AlbertModel(_config().replace(num_hidden_groups=3))
  with pytest.raises(KeyError, match="albert_layer_groups.1.*num_hidden_groups"):
    albert_tf.load_checkpoint(model, os.path.join(HF, "pretraining"))


def test_learned_projection_into_a_model_without_one_is_refused():
  model = AlbertModel(_config().replace(embedding_size=32))
  with pytest.raises(ValueError, match="embedding_hidden_mapping_in"):
    albert_tf.load_checkpoint(model, os.path.join(HF, "encoder"))


# ---- export ------------------------------------------------------------------------------------
@pytest.mark.parametrize("folder, make", [
    ("pretraining", lambda c: AlbertPretrainer(c)),
    ("encoder", lambda c: AlbertModel(c)),
    ("classifier", lambda c: AlbertClassifier(c, num_labels=3)),
    ("qa", lambda c: AlbertSpanLabeler(c)),
])
def test_export_matches_fixture_and_reads_back_bit_identical(tmp_path, folder, make):
  model = make(_config(folder))
  albert_tf.load_checkpoint(model, os.path.join(HF, folder))
  out = str(tmp_path / "out")
  albert_tf.save_hf_checkpoint(model, out, spm_model_file=os.path.join(HF, folder, "spiece.model"))
  assert sorted(os.listdir(out)) == ["config.json", "model.safetensors", "spiece.model",
                                     "tokenizer_config.json"]
  assert _keys(os.path.join(out, "model.safetensors")) == _keys(
      os.path.join(HF, folder, "model.safetensors"))
  ours = safetensors.numpy.load_file(os.path.join(out, "model.safetensors"))
  for key, value in safetensors.numpy.load_file(
      os.path.join(HF, folder, "model.safetensors")).items():
    np.testing.assert_array_equal(ours[key], value, err_msg=key)
  assert hf_config.from_hf_config(out) == _config(folder).replace(
      **({"num_labels": 3} if folder == "classifier" else {}))
  tokenizer = json.loads(open(os.path.join(out, "tokenizer_config.json")).read())
  assert tokenizer["keep_accents"] is False and tokenizer["remove_space"] is True
  again = make(_config(folder))
  report = albert_tf.load_checkpoint(again, out)
  assert not report.unused
  for (name, a), b in zip(model.original_variables().items(),
                          again.original_variables().values()):
    if name in report.loaded:
      np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=name)


def test_round_trip_of_several_groups_and_inner_groups_relu_three_token_types(tmp_path):
  config = _config().replace(num_hidden_layers=4, num_hidden_groups=2, inner_group_num=2,
                             hidden_act="relu", type_vocab_size=3)
  model = AlbertPretrainer(config)
  albert_tf.save_hf_checkpoint(model, str(tmp_path))
  keys = _keys(str(tmp_path / "model.safetensors"))
  assert ("albert.encoder.albert_layer_groups.1.albert_layers.1.ffn.weight" in keys
          and keys["albert.embeddings.token_type_embeddings.weight"][0] == (3, 16))
  again_config = hf_config.from_hf_config(str(tmp_path))
  assert again_config.hidden_act == "relu" and again_config.inner_group_num == 2
  again = AlbertPretrainer(again_config)
  report = albert_tf.load_checkpoint(again, str(tmp_path))
  assert not report.missing and not report.unused
  for (name, a), b in zip(model.original_variables().items(),
                          again.original_variables().values()):
    np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=name)


def test_export_without_projection_writes_the_identity_and_reads_back(tmp_path):
  config = _config().replace(embedding_size=32)
  model = AlbertModel(config)
  albert_tf.save_hf_checkpoint(model, str(tmp_path))
  tensors = safetensors.numpy.load_file(str(tmp_path / "model.safetensors"))
  np.testing.assert_array_equal(tensors["encoder.embedding_hidden_mapping_in.weight"],
                                np.eye(32, dtype=np.float32))
  again = AlbertModel(config)
  report = albert_tf.load_checkpoint(again, str(tmp_path))
  assert not report.missing and not report.unused
  for a, b in zip(model.weights, again.weights):
    np.testing.assert_array_equal(a.numpy(), b.numpy())


@pytest.mark.parametrize("folder", ["pretraining", "classifier", "qa"])
def test_export_hf_layout_from_the_released_layout_keeps_the_head(tmp_path, folder):
  config = _config(folder)
  model = {"pretraining": AlbertPretrainer(config),
           "classifier": AlbertClassifier(config, num_labels=3),
           "qa": AlbertSpanLabeler(config)}[folder]
  albert_tf.load_checkpoint(model, os.path.join(HF, folder))
  prefix = albert_tf.save_original_checkpoint(model, str(tmp_path / "ckpt" / "model.ckpt-1"))
  if folder == "classifier":  # run_classifier's file: tells its [3, H] head from a tagger's
    (tmp_path / "ckpt" / "submit_results.tsv").write_text("")
  out = export_hf_layout(config, prefix, str(tmp_path / "hf"))
  assert _keys(os.path.join(out, "model.safetensors")) == _keys(
      os.path.join(HF, folder, "model.safetensors"))
  written = json.loads(open(os.path.join(out, "config.json")).read())
  assert written["architectures"] == json.loads(
      open(os.path.join(HF, folder, "config.json")).read())["architectures"]
  with pytest.raises(FileExistsError, match="not empty"):
    export_hf_layout(config, prefix, out)


def test_export_hf_layout_of_an_encoder_alone_writes_no_random_heads(tmp_path):
  out = export_hf_layout(_config("encoder"), os.path.join(HF, "encoder"), str(tmp_path / "hf"))
  assert _keys(os.path.join(out, "model.safetensors")) == _keys(
      os.path.join(HF, "encoder", "model.safetensors"))


@pytest.mark.slow
def test_export_checkpoints_binary_format_hf(tmp_path):
  config_file = str(tmp_path / "albert_config.json")
  _config().to_json_file(config_file)
  out = tmp_path / "hf"
  run_binary("export_checkpoints", [
      f"--albert_config_file={config_file}", f"--init_checkpoint={os.path.join(HF, 'pretraining')}",
      f"--spm_model_file={os.path.join(HF, 'pretraining', 'spiece.model')}", "--format=hf",
      f"--export_path={out}"])
  assert sorted(os.listdir(out)) == ["config.json", "model.safetensors", "spiece.model",
                                     "tokenizer_config.json"]
  ours = safetensors.numpy.load_file(str(out / "model.safetensors"))
  for key, value in safetensors.numpy.load_file(
      os.path.join(HF, "pretraining", "model.safetensors")).items():
    np.testing.assert_array_equal(ours[key], value, err_msg=key)


# ---- binaries take HF directories --------------------------------------------------------------
@pytest.mark.slow
def test_run_classifier_exports_an_hf_classifier_for_serving(tmp_path, reference):
  (tmp_path / "glue").mkdir()
  export = tmp_path / "export"
  # No --albert_config_file, no --spm_model_file: both come from the HF directory.
  run_binary("run_classifier", [
      "--task_name=MNLI", f"--data_dir={tmp_path / 'glue'}", f"--output_dir={tmp_path / 'out'}",
      f"--init_checkpoint={os.path.join(HF, 'classifier')}", f"--export_dir={export}",
      "--max_seq_length=12"])
  served = load_served_model(str(export))
  out = run_signature(served, "tokens", {
      "input_ids": reference["input_ids"].astype(np.int32),
      "input_mask": reference["attention_mask"].astype(np.int32),
      "segment_ids": reference["token_type_ids"].astype(np.int32)})
  logits = reference["classifier_logits"]
  expected = np.exp(logits - logits.max(-1, keepdims=True))
  expected /= expected.sum(-1, keepdims=True)
  np.testing.assert_allclose(np.asarray(out["probabilities"]), expected, atol=TOL)


@pytest.mark.slow
def test_export_saved_model_serves_an_hf_encoder(tmp_path, reference):
  export = tmp_path / "export"
  result = run_binary("export_saved_model", [f"--init_checkpoint={os.path.join(HF, 'encoder')}",
                                             f"--export_dir={export}", "--max_seq_length=12"])
  # No MLM / SOP heads in the checkpoint: their signatures are left out, saying why.
  assert not {"mlm", "sop_log_probs"} & set(load_served_model(str(export)).signatures)
  for name in ("mlm", "sop_log_probs"):
    assert f"left out the {name} signature: {os.path.join(HF, 'encoder')} lacks" in result.stdout
  out = run_signature(load_served_model(str(export)), "tokens", {
      "input_ids": reference["input_ids"].astype(np.int32),
      "input_mask": reference["attention_mask"].astype(np.int32),
      "segment_ids": reference["token_type_ids"].astype(np.int32)})
  np.testing.assert_allclose(np.asarray(out["pooled_output"]),
                             reference["encoder_pooler_output"], atol=TOL)


@pytest.mark.slow
def test_binaries_without_a_config_say_which_flag_to_give(tmp_path):
  # A run's directory (its `checkpoint` file) with no config beside it.
  (tmp_path / "checkpoint").write_text('model_checkpoint_path: "model.ckpt-1"\n')
  result = run_binary("export_saved_model", [f"--init_checkpoint={tmp_path}",
                                             f"--export_dir={tmp_path / 'export'}"], check=False)
  assert result.returncode != 0
  assert "give --albert_config_file" in result.stderr


@pytest.mark.slow
def test_run_pretraining_starts_from_an_hf_directory(tmp_path):
  original_model = os.path.join(TESTDATA, "original_model")
  result = run_binary("run_pretraining", [
      f"--input_file={os.path.join(original_model, 'eval.tfrecord')}",
      f"--output_dir={tmp_path}", f"--init_checkpoint={os.path.join(HF, 'pretraining')}",
      "--do_train=false", "--do_eval", "--eval_batch_size=3", "--max_eval_steps=1",
      "--max_seq_length=24", "--max_predictions_per_seq=5"])
  assert "loaded 32 variables" in result.stderr and "missing 0; unused 0" in result.stderr
  assert (tmp_path / "eval_results.txt").exists()
