"""checkpoints/formats.py, a checkpoint's config and tokenizer: a fine-tuning output_dir is a
checkpoint to point --init_checkpoint at: its albert_config.json (and a prefix's,
`.../model.ckpt-best`) is the model config when --albert_config_file is not given, and is
checked against it when it is; the tokenizer the run kept there
(checkpoints.companions.keep_tokenizer) is the default tokenizer."""

import json
import os
import shutil

import numpy as np
import pytest

import albert_tf
from albert_tf.core import errors, settings
from albert_tf.checkpoints import labels
from albert_tf.checkpoints import companions, model_config, open_checkpoint, spm_model_file
from helpers import ORIGINAL_MODEL, TESTDATA, run_binary

SPM = os.path.join(TESTDATA, "original_pretraining_data", "30k-clean-tiny.model")
VOCAB = os.path.join(TESTDATA, "cmrc2018", "vocab.txt")


def _config(**changes):
  values = dict(vocab_size=1000, embedding_size=8, hidden_size=16, num_hidden_layers=2,
                num_attention_heads=2, intermediate_size=32, max_position_embeddings=64,
                hidden_dropout_prob=0.1)
  return albert_tf.AlbertConfig(**dict(values, **changes))


def _output_dir(directory, config=None):
  """What run_classifier leaves in its output_dir: model.ckpt-best (and a later model.ckpt-N),
  albert_config.json, classifier_labels.json."""
  config = config or _config()
  directory = str(directory)
  model = albert_tf.AlbertClassifier(config, num_labels=2)
  albert_tf.save_original_checkpoint(model, os.path.join(directory, "model.ckpt-best"))
  albert_tf.save_original_checkpoint(model, os.path.join(directory, "model.ckpt-6"),
                                     global_step=6)
  config.to_json_file(os.path.join(directory, "albert_config.json"))
  labels.write_classifier_labels(directory, ["0", "1"], labels.SINGLE_LABEL)
  return directory, model


def test_output_dir_and_its_prefixes_give_their_albert_config(tmp_path):
  directory, model = _output_dir(tmp_path / "mrpc")
  kept = os.path.join(directory, "albert_config.json")
  for checkpoint in (directory, os.path.join(directory, "model.ckpt-best"),
                     os.path.join(directory, "model.ckpt-6")):
    config, config_file = model_config(None, checkpoint)
    assert (config, config_file) == (_config(), kept), checkpoint
  # And the model it gives loads the checkpoint: its best evaluation, whole.
  config, _ = model_config(None, directory)
  loaded = albert_tf.AlbertClassifier(config, num_labels=2)
  report = albert_tf.load_checkpoint(loaded, directory)
  assert report.missing == [] and report.path.endswith("model.ckpt-best")
  np.testing.assert_array_equal(loaded.weights[0].numpy(), model.weights[0].numpy())


def test_without_any_config_the_error_names_the_ways_to_give_one(tmp_path):
  shutil.copy(os.path.join(ORIGINAL_MODEL, "model.ckpt-0.index"), tmp_path)
  with pytest.raises(errors.UsageError, match="give --albert_config_file, or an "
                                              "--init_checkpoint with its config: a run's "
                                              "output_dir or a checkpoint with "
                                              "albert_config.json beside it"):
    model_config(None, str(tmp_path / "model.ckpt-0"))


def test_a_config_flag_that_disagrees_with_the_kept_config_is_refused(tmp_path):
  directory, _ = _output_dir(tmp_path / "mrpc")
  kept = os.path.join(directory, "albert_config.json")
  other = str(tmp_path / "other.json")
  _config(hidden_size=32, hidden_act="relu").to_json_file(other)
  for checkpoint in (directory, os.path.join(directory, "model.ckpt-best")):
    with pytest.raises(errors.ConfigError) as error:
      model_config(other, checkpoint)
    message = str(error.value)
    assert message.startswith(f"--albert_config_file={other} and {kept} (the config beside "
                              f"--init_checkpoint={checkpoint}) disagree on the architecture: "
                              "hidden_size: 32 vs 16; hidden_act: 'relu' vs 'gelu'.")
    assert "drop --albert_config_file to use it, or fix" in message
  # Dropouts are fine-tuning's choice, and the layers' layout the loader's (init_from_group0).
  agreeing = str(tmp_path / "agreeing.json")
  _config(hidden_dropout_prob=0.0, num_hidden_layers=4, num_hidden_groups=2,
          hidden_act="GELU").to_json_file(agreeing)
  config, config_file = model_config(agreeing, directory)
  assert config_file == agreeing and config.num_hidden_groups == 2


def test_keep_tokenizer_copies_once_and_refuses_another(tmp_path):
  out = tmp_path / "mrpc"
  out.mkdir()
  tokenizer = settings.TokenizerSettings(spm_model_file=SPM)
  kept = companions.keep_tokenizer(str(out), tokenizer)
  assert kept == str(out / "spiece.model")
  assert (out / "spiece.model").read_bytes() == open(SPM, "rb").read()
  assert companions.keep_tokenizer(str(out), tokenizer) == kept  # the same file: kept as is
  assert sorted(os.listdir(out)) == ["spiece.model"]  # no temporary left
  other = tmp_path / "other.model"
  other.write_bytes(b"another model")
  with pytest.raises(errors.ResumeMismatchError,
                     match=rf"--spm_model_file={other} is not the tokenizer {out} was "
                           rf"fine-tuned with \(kept there as {kept}\)"):
    companions.keep_tokenizer(str(out), settings.TokenizerSettings(spm_model_file=str(other)))
  assert (out / "spiece.model").read_bytes() == open(SPM, "rb").read()
  assert companions.keep_tokenizer(str(tmp_path), settings.TokenizerSettings()) is None


def test_the_kept_tokenizer_is_the_default(tmp_path):
  directory, _ = _output_dir(tmp_path / "mrpc")
  companions.keep_tokenizer(directory, settings.TokenizerSettings(spm_model_file=SPM))
  kept = os.path.join(directory, "spiece.model")
  for checkpoint in (directory, os.path.join(directory, "model.ckpt-best")):
    assert spm_model_file(None, None, checkpoint) == kept
    assert open_checkpoint(checkpoint).tokenizer() == (kept, None)
  assert spm_model_file(SPM, None, directory) == SPM  # the same bytes under another name
  with pytest.raises(errors.UsageError, match="is a WordPiece vocabulary, not the SentencePiece"):
    spm_model_file(None, VOCAB, directory)  # not the tokenizer the model was trained with
  # A WordPiece run keeps its vocabulary.
  wordpiece, _ = _output_dir(tmp_path / "cmrc")
  companions.keep_tokenizer(wordpiece, settings.TokenizerSettings(vocab_file=VOCAB))
  assert spm_model_file(None, None, wordpiece) is None
  assert open_checkpoint(wordpiece).tokenizer() == (None, os.path.join(wordpiece, "vocab.txt"))
  assert open_checkpoint(wordpiece).tokenizer(None, VOCAB) == (None, VOCAB)


@pytest.mark.slow  # a binary's start-up
def test_export_checkpoints_takes_config_and_tokenizer_from_the_output_dir(tmp_path):
  directory, _ = _output_dir(tmp_path / "mrpc")
  companions.keep_tokenizer(directory, settings.TokenizerSettings(spm_model_file=SPM))
  run_binary("export_checkpoints", [f"--init_checkpoint={directory}",
                                    f"--export_path={tmp_path / 'released'}"])
  assert sorted(os.listdir(tmp_path / "released")) == [
      "albert_config.json", "model.ckpt-best.data-00000-of-00001", "model.ckpt-best.index",
      "spiece.model"]
  with open(tmp_path / "released" / "albert_config.json", encoding="utf-8") as f:
    assert albert_tf.AlbertConfig.from_dict(json.load(f)) == _config()


@pytest.mark.slow  # a binary's start-up; docs/exports.md's static int8 command
def test_export_onnx_finds_the_output_dirs_config(tmp_path):
  pytest.importorskip("onnx")
  directory, _ = _output_dir(tmp_path / "mrpc")
  result = run_binary("export_onnx", [f"--init_checkpoint={directory}", "--max_seq_length=16",
                                      f"--output_file={tmp_path / 'model.onnx'}"])
  assert os.path.getsize(tmp_path / "model.onnx") > 0, result.stdout
