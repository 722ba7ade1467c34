"""keras-hub 0.32 both ways, on the fixture config (tests/testdata/original_model):
- our --format=hf export loads in keras-hub's AlbertBackbone / AlbertTokenizer (from_preset on
  the directory), with our outputs and our ids;
- a keras-hub preset (save_to_preset of an AlbertTextClassifier) is our --init_checkpoint: the
  config and the SentencePiece model come from it, the weights load (LoadReport) and give
  keras-hub's outputs, in Python, through export_saved_model's signatures, and through
  export_checkpoints' released layout (the original's names and shapes).
keras-hub is imported in this process: test_keras_hub_leaves_keras_as_it_was checks that it
changes none of the Keras settings our models use.
"""

import json
import os
import shutil

import keras
import numpy as np
import pytest
import tensorflow as tf

from helpers import ORIGINAL_MODEL, TESTDATA, read_tf1_checkpoint, run_binary

from albert_tf.core import errors
from albert_tf.checkpoints import (hf, is_keras_hub_preset, keras_hub as presets, layout,
                                   load_checkpoint, model_config, spm_model_file)
from albert_tf.core.config import AlbertConfig
from albert_tf.core.settings import TokenizerSettings
from albert_tf.tasks.classifier.model import AlbertClassifier
from albert_tf.models import AlbertModel, AlbertPretrainer
from albert_tf.tasks.race.model import AlbertMultipleChoice
from albert_tf.tasks.squad.model import AlbertSpanLabeler
from albert_tf.tasks.ner.model import AlbertTokenClassifier
from albert_tf.tokenization import FullTokenizer

CONFIG_FILE = os.path.join(ORIGINAL_MODEL, "albert_config.json")
CHECKPOINT = os.path.join(ORIGINAL_MODEL, "model.ckpt-4")
SPM = os.path.join(TESTDATA, "original_pretraining_data", "30k-clean-tiny.model")
# Lower-case, accent-free, single-spaced: the original's preprocessing changes none of it, so
# keras-hub's tokenizer (SentencePiece alone) gives the same ids as ours.
TEXTS = ["the quick brown fox jumps over the lazy dog.", "hello world, it is a test (1999)"]
NUM_CLASSES = 3
MASKED = np.array([[1, 4, 6], [2, 5, 9]], np.int32)  # [B, P] positions of _batch()


def _keras_settings():
  return (keras.config.backend(), keras.config.floatx(), keras.config.epsilon(),
          keras.config.image_data_format(), keras.mixed_precision.global_policy().name)


_BEFORE = _keras_settings()
keras_hub = pytest.importorskip("keras_hub")


def _batch():
  """Token ids [2, 12] with padding and two segments."""
  ids = np.array([[2, 15, 27, 9, 101, 3, 44, 3, 0, 0, 0, 0],
                  [2, 31, 3, 40, 50, 60, 70, 80, 90, 999, 3, 0]], np.int32)
  mask = (ids > 0).astype(np.int32)
  segments = np.array([[0] * 6 + [1] * 2 + [0] * 4, [0] * 3 + [1] * 9], np.int32) * mask
  return ids, mask, segments


def _keras_hub_inputs(ids, mask, segments):
  return {"token_ids": ids, "segment_ids": segments, "padding_mask": mask}


def _our_inputs(ids, mask, segments):
  return {"input_ids": ids, "input_mask": mask, "segment_ids": segments}


def _assert_close(ours, theirs, mask, atol=1e-4):
  """sequence_output [B, T, H] at real positions and pooled_output [B, H] within atol."""
  seq = np.abs(np.asarray(ours["sequence_output"]) - np.asarray(theirs["sequence_output"]))
  assert (seq * mask[..., None]).max() < atol
  np.testing.assert_allclose(ours["pooled_output"], theirs["pooled_output"], atol=atol)


def test_keras_hub_leaves_keras_as_it_was():
  assert _keras_settings() == _BEFORE


# -- ours -> keras-hub ------------------------------------------------------------------------
@pytest.fixture(scope="module")
def encoder():
  """Our pretrainer on the original's model.ckpt-4."""
  model = AlbertPretrainer(AlbertConfig.from_json_file(CONFIG_FILE))
  load_checkpoint(model, CHECKPOINT)
  return model


def test_hf_export_loads_in_keras_hub(encoder, tmp_path):
  from albert_tf.export.hf import export_hf_layout
  out = export_hf_layout(encoder.config, CHECKPOINT, str(tmp_path / "hf"),
                         TokenizerSettings(spm_model_file=SPM), config_file=CONFIG_FILE,
                         head="pretraining")
  backbone = keras_hub.models.AlbertBackbone.from_preset(out)
  ids, mask, segments = _batch()
  _assert_close(encoder.encoder(_our_inputs(ids, mask, segments)),
                backbone(_keras_hub_inputs(ids, mask, segments)), mask)
  tokenizer = keras_hub.models.AlbertTokenizer.from_preset(out)
  ours = FullTokenizer(vocab_file=None, do_lower_case=True, spm_model_file=SPM)
  for text in TEXTS:
    expected = ours.convert_tokens_to_ids(ours.tokenize(text))
    assert len(expected) > 5 and np.asarray(tokenizer(text)).tolist() == expected


def test_keras_hub_tokenizer_is_sentencepiece_alone():
  """What docs/huggingface.md says: keras-hub neither lower-cases nor runs the original's
  preprocessing, so cased text gets our --nodo_lower_case ids, not our default's."""
  theirs = keras_hub.models.AlbertTokenizer(proto=SPM)
  text = "Hello World, The Quick Fox"
  cased, uncased = (FullTokenizer(vocab_file=None, do_lower_case=lower, spm_model_file=SPM)
                    for lower in (False, True))
  ids = np.asarray(theirs(text)).tolist()
  assert ids == cased.convert_tokens_to_ids(cased.tokenize(text))
  assert ids != uncased.convert_tokens_to_ids(uncased.tokenize(text))


@pytest.mark.parametrize("model_class, readable", [
    (AlbertPretrainer, True),          # --head=pretraining
    (AlbertClassifier, True),          # --head=classifier
    (AlbertMultipleChoice, True),      # --head=multiple_choice
    (AlbertModel, False),              # --head=none: keys without `albert.`
    (AlbertSpanLabeler, False),        # --head=squad_v1: no pooler (as transformers')
    (AlbertTokenClassifier, False),    # --head=token_classifier: no pooler
])
def test_which_hf_heads_keras_hub_reads(encoder, tmp_path, model_class, readable):
  if model_class is AlbertModel:
    model = encoder.encoder
  elif model_class in (AlbertClassifier, AlbertTokenClassifier):
    model = model_class(num_labels=NUM_CLASSES, encoder=encoder.encoder)
  else:
    model = model_class(encoder=encoder.encoder)
  out = str(tmp_path / "hf")
  hf.save_hf_checkpoint(model, out, SPM)
  if not readable:
    with pytest.raises(Exception, match="albert.pooler.weight|albert.embeddings"):
      keras_hub.models.AlbertBackbone.from_preset(out)
    return
  backbone = keras_hub.models.AlbertBackbone.from_preset(out)
  ids, mask, segments = _batch()
  _assert_close(encoder.encoder(_our_inputs(ids, mask, segments)),
                backbone(_keras_hub_inputs(ids, mask, segments)), mask)


# -- keras-hub -> ours ------------------------------------------------------------------------
def _backbone():
  """keras-hub's AlbertBackbone of the fixture config."""
  c = json.load(open(CONFIG_FILE, encoding="utf-8"))
  return keras_hub.models.AlbertBackbone(
      vocabulary_size=c["vocab_size"], num_layers=c["num_hidden_layers"],
      num_heads=c["num_attention_heads"], num_groups=c["num_hidden_groups"],
      num_inner_repetitions=c["inner_group_num"], embedding_dim=c["embedding_size"],
      hidden_dim=c["hidden_size"], intermediate_dim=c["intermediate_size"], dropout=0.0,
      max_sequence_length=c["max_position_embeddings"], num_segments=c["type_vocab_size"])


def _random_preset(backbone, directory, task):
  """save_to_preset of a keras-hub AlbertTextClassifier (task "classifier") or AlbertMaskedLM
  ("masked_lm") on `backbone`, every weight drawn at random (biases and layer norms too:
  keras-hub starts them at 0 and 1), and keras-hub's outputs on _batch():
  {directory, sequence_output, pooled_output, logits, text_ids (TEXTS packed)}."""
  tokenizer = keras_hub.models.AlbertTokenizer(proto=SPM)
  if task == "classifier":
    model = keras_hub.models.AlbertTextClassifier(
        backbone, num_classes=NUM_CLASSES,
        preprocessor=keras_hub.models.AlbertTextClassifierPreprocessor(tokenizer,
                                                                       sequence_length=32))
  else:
    model = keras_hub.models.AlbertMaskedLM(
        backbone, preprocessor=keras_hub.models.AlbertMaskedLMPreprocessor(tokenizer,
                                                                           sequence_length=32))
  rng = np.random.default_rng(0)
  for variable in model.weights:
    shape = tuple(variable.shape)
    value = rng.normal(0.0, 0.1 if len(shape) > 1 else 0.3, shape)
    if variable.path.endswith("gamma"):
      value += 1.0
    variable.assign(value.astype(np.float32))
  path = os.path.join(str(directory), "preset")
  model.save_to_preset(path)
  inputs = _keras_hub_inputs(*_batch())
  outputs = {k: np.asarray(v) for k, v in backbone(inputs).items()}
  if task != "classifier":
    inputs["mask_positions"] = MASKED
  outputs["logits"] = np.asarray(model(inputs))
  ids = [[2] + np.asarray(tokenizer(text)).tolist() + [3] for text in TEXTS]
  return dict(outputs, directory=path, text_ids=ids)


@pytest.fixture(scope="module")
def preset(tmp_path_factory):
  """A keras-hub AlbertTextClassifier preset of the fixture config (see _random_preset)."""
  return _random_preset(_backbone(), tmp_path_factory.mktemp("keras_hub"), "classifier")


def test_preset_files(preset):
  files = {os.path.relpath(os.path.join(d, f), preset["directory"])
           for d, _, names in os.walk(preset["directory"]) for f in names}
  assert {"config.json", "model.weights.h5", "metadata.json", "tokenizer.json",
          os.path.join("assets", "tokenizer", "vocabulary.spm"), "task.json",
          "task.weights.h5"} <= files
  assert is_keras_hub_preset(preset["directory"])
  assert not is_keras_hub_preset(ORIGINAL_MODEL) and not is_keras_hub_preset(
      os.path.join(TESTDATA, "hf_albert", "encoder"))


def test_preset_supplies_config_and_spm(preset):
  config, config_file = model_config(None, preset["directory"])
  expected = AlbertConfig.from_json_file(CONFIG_FILE)
  for field in ("vocab_size", "embedding_size", "hidden_size", "num_hidden_layers",
                "num_hidden_groups", "num_attention_heads", "intermediate_size",
                "inner_group_num", "hidden_act", "max_position_embeddings", "type_vocab_size",
                "hidden_dropout_prob", "attention_probs_dropout_prob", "initializer_range"):
    assert getattr(config, field) == getattr(expected, field), field
  assert config_file == os.path.join(preset["directory"], "config.json")
  # An agreeing --albert_config_file is taken; the preset's spm is the default and may be given.
  assert model_config(CONFIG_FILE, preset["directory"])[1] == CONFIG_FILE
  spm = os.path.join(preset["directory"], "assets", "tokenizer", "vocabulary.spm")
  assert spm_model_file(None, None, preset["directory"]) == spm
  assert spm_model_file(SPM, None, preset["directory"]) == SPM  # the same bytes
  with pytest.raises(errors.UsageError,
                     match="--vocab_file=vocab.txt is a WordPiece vocabulary, not the"):
    spm_model_file(None, "vocab.txt", preset["directory"])


def test_preset_loads_with_keras_hub_outputs(preset):
  config, _ = model_config(None, preset["directory"])
  model = AlbertClassifier(config, num_labels=NUM_CLASSES)
  report = load_checkpoint(model, preset["directory"])
  assert sorted(report.loaded) == sorted(layout.original_variable_map(model))
  assert len(report.loaded) == 27 and report.missing == [] and report.unused == []
  assert report.path == preset["directory"]
  ids, mask, segments = _batch()
  inputs = _our_inputs(ids, mask, segments)
  outputs = model(inputs)
  _assert_close(outputs, preset, mask)
  np.testing.assert_allclose(outputs["logits"], preset["logits"], atol=1e-4)
  # A pretrainer takes the backbone: its heads missing, keras-hub's classifier unused.
  report = load_checkpoint(AlbertPretrainer(config), preset["directory"])
  assert report.unused == ["output_bias", "output_weights"]
  assert {n.split("/")[0] for n in report.missing} == {"cls"} and len(report.loaded) == 25


def test_masked_lm_preset_head_loads(tmp_path):
  """AlbertMaskedLM's head is our cls/predictions/. Its layer norm epsilon is 1e-5, ours the
  original's 1e-12: the logits differ by up to 1.7e-4 here (a head mapped wrong: by O(1))."""
  preset = _random_preset(_backbone(), tmp_path, "masked_lm")
  config, _ = model_config(None, preset["directory"])
  model = AlbertPretrainer(config)
  report = load_checkpoint(model, preset["directory"])
  assert len(report.loaded) == 30 and report.unused == []
  assert report.missing == ["cls/seq_relationship/output_bias",
                            "cls/seq_relationship/output_weights"]
  ids, mask, segments = _batch()
  outputs = model(dict(_our_inputs(ids, mask, segments), masked_lm_positions=MASKED))
  np.testing.assert_allclose(outputs["masked_lm_logits"], preset["logits"], atol=1e-3)


@pytest.mark.slow
def test_export_saved_model_signatures_on_preset(preset, tmp_path):
  from albert_tf.export.saved_model import ServingModule, export_saved_model
  directory = preset["directory"]
  config, config_file = model_config(None, directory)
  model = AlbertPretrainer(config)
  module = ServingModule(model,
                         TokenizerSettings(spm_model_file=spm_model_file(None, None, directory)),
                         32, config_file=config_file, head_signatures=())
  print(load_checkpoint(model, directory))
  loaded = tf.saved_model.load(export_saved_model(module, str(tmp_path / "serving"), 1))
  ids, mask, segments = _batch()
  out = loaded.signatures["tokens"](input_ids=tf.constant(ids), input_mask=tf.constant(mask),
                                    segment_ids=tf.constant(segments))
  _assert_close({k: v.numpy() for k, v in out.items()}, preset, mask)
  text = loaded.signatures["serving_default"](text=tf.constant(TEXTS))
  for row, expected in enumerate(preset["text_ids"]):
    assert len(expected) < 32 and text["input_ids"].numpy()[row].tolist() == expected + [0] * (
        32 - len(expected))
  ids, mask = text["input_ids"].numpy(), text["input_mask"].numpy()
  theirs = keras_hub.models.AlbertBackbone.from_preset(directory)(
      _keras_hub_inputs(ids, mask, np.zeros_like(ids)))
  _assert_close({k: text[k].numpy() for k in ("sequence_output", "pooled_output")}, theirs,
                mask)


def test_export_checkpoints_released_layout_from_preset(preset, tmp_path):
  from albert_tf.export.released import export_released_layout
  directory = preset["directory"]
  config, _ = model_config(None, directory)
  prefix = export_released_layout(
      config, directory, str(tmp_path / "released"),
      TokenizerSettings(spm_model_file=spm_model_file(None, None, directory)))
  assert sorted(os.listdir(tmp_path / "released")) == [
      "albert_config.json", "model.ckpt-best.data-00000-of-00001", "model.ckpt-best.index",
      "vocabulary.spm"]
  written = read_tf1_checkpoint(prefix)
  original = read_tf1_checkpoint(CHECKPOINT)
  shapes = lambda tensors: {n: v.shape for n, v in tensors.items()
                            if layout.is_model_weight_name(n)}
  assert shapes(written) == shapes(original)
  tensors, _ = presets.preset_tensors(directory)
  for name, value in tensors.items():
    if name in written:  # the classifier head is no part of the released layout
      np.testing.assert_array_equal(written[name], value, err_msg=name)
  assert len([n for n in tensors if n in written]) == 25


@pytest.mark.slow  # a binary's start-up
def test_contradicting_config_flag_is_one_error_line(preset, tmp_path):
  other = tmp_path / "albert_config.json"
  values = json.load(open(CONFIG_FILE, encoding="utf-8"))
  other.write_text(json.dumps(dict(values, hidden_size=64)))
  result = run_binary("export_checkpoints", [
      f"--init_checkpoint={preset['directory']}", f"--albert_config_file={other}",
      f"--export_path={tmp_path / 'out'}"], check=False)
  assert result.returncode == 1, result.stderr[-3000:]
  lines = [line for line in result.stderr.splitlines() if line.startswith("error:")]
  assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr[-3000:]
  assert "contradicts the keras-hub preset" in lines[0] and "hidden_size is 64" in lines[0]
  assert not os.path.exists(tmp_path / "out")


def _broken(preset, tmp_path, breakage):
  """A copy of `preset` with model.weights.h5 deleted ("no weights") or config.json cut short
  ("corrupt config")."""
  directory = str(tmp_path / "broken")
  shutil.copytree(preset["directory"], directory)
  if breakage == "no weights":
    os.remove(os.path.join(directory, "model.weights.h5"))
  else:
    with open(os.path.join(directory, "config.json"), "r+", encoding="utf-8") as f:
      f.truncate(40)
  return directory


@pytest.mark.parametrize("breakage, message", [
    ("no weights", "keras-hub preset {d} has no model.weights.h5 (the backbone's weights): save "
                   "the preset again (save_to_preset) or copy it whole"),
    ("corrupt config", "{d}/config.json, the model config of keras-hub preset {d}, is not valid "
                       "JSON"),
])
def test_a_broken_preset_is_named_with_its_file(preset, tmp_path, breakage, message):
  directory = _broken(preset, tmp_path, breakage)
  expected = message.format(d=directory)
  for call in (lambda: model_config(None, directory), lambda: model_config(CONFIG_FILE, directory),
               lambda: spm_model_file(None, None, directory),
               lambda: load_checkpoint(AlbertModel(AlbertConfig.from_json_file(CONFIG_FILE)),
                                       directory)):
    with pytest.raises(errors.CheckpointError) as error:
      call()
    assert str(error.value).startswith(expected), str(error.value)
  assert not is_keras_hub_preset(directory)


@pytest.mark.slow  # a binary's start-up
def test_a_broken_preset_is_one_error_line(preset, tmp_path):
  directory = _broken(preset, tmp_path, "no weights")
  result = run_binary("export_saved_model", [f"--init_checkpoint={directory}",
                                             f"--export_dir={tmp_path / 'out'}"], check=False)
  assert result.returncode == 1, result.stderr[-3000:]
  lines = [line for line in result.stderr.splitlines() if line.startswith("error:")]
  assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr[-3000:]
  assert f"keras-hub preset {directory} has no model.weights.h5" in lines[0]
  assert not os.path.exists(tmp_path / "out")


def test_hf_export_from_preset_keeps_keras_hubs_logits(preset, tmp_path):
  """A keras-hub classifier preset written in transformers' layout (--format=hf): its head is
  found from the preset's weights, and the export read back gives keras-hub's logits."""
  from albert_tf.export.hf import checkpoint_head, export_hf_layout
  directory = preset["directory"]
  assert checkpoint_head(directory) == ("classifier", NUM_CLASSES)
  config, config_file = model_config(None, directory)
  out = export_hf_layout(config, directory, str(tmp_path / "hf"),
                         TokenizerSettings(spm_model_file=spm_model_file(None, None, directory)),
                         config_file=config_file)
  model = AlbertClassifier(config, num_labels=NUM_CLASSES)
  load_checkpoint(model, out)
  ids, mask, segments = _batch()
  np.testing.assert_allclose(model(_our_inputs(ids, mask, segments))["logits"],
                             preset["logits"], atol=1e-4)
