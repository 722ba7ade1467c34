"""Original-layout checkpoints: loading, writing, errors."""

import logging
import os

import numpy as np
import pytest
import tensorflow as tf

import albert_tf
import numpy_reference as ref
from albert_tf.checkpoints import layout
from albert_tf.training.checkpointing import restore_or_initialize
from helpers import ORIGINAL_MODEL, read_tf1_checkpoint, run_binary, write_tf1_checkpoint

FIXTURE_CKPT = os.path.join(ORIGINAL_MODEL, "model.ckpt-0")


def _fixture_config(**changes):
  config = albert_tf.AlbertConfig.from_json_file(os.path.join(ORIGINAL_MODEL, "albert_config.json"))
  return config.replace(**changes) if changes else config


def test_save_then_load_is_bit_exact_with_fixture_names(tmp_path):
  model = albert_tf.AlbertPretrainer(_fixture_config())
  albert_tf.load_original_checkpoint(model, FIXTURE_CKPT)
  prefix = albert_tf.save_original_checkpoint(model, str(tmp_path / "model.ckpt-best"))

  fixture = tf.train.load_checkpoint(FIXTURE_CKPT).get_variable_to_shape_map()
  fixture = {n: s for n, s in fixture.items() if not n.endswith(("/adam_m", "/adam_v"))}
  written = tf.train.load_checkpoint(prefix).get_variable_to_shape_map()
  assert written == fixture  # names and shapes, global_step included

  fresh = albert_tf.AlbertPretrainer(_fixture_config())
  albert_tf.load_original_checkpoint(fresh, str(tmp_path))  # the directory form
  for (name, a), b in zip(layout.original_variable_map(model).items(),
                          layout.original_variable_map(fresh).values()):
    np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=name)
  original = read_tf1_checkpoint(FIXTURE_CKPT)
  for name, value in read_tf1_checkpoint(prefix).items():
    np.testing.assert_array_equal(value, original[name], err_msg=name)
  assert not [f for f in os.listdir(tmp_path) if f.startswith(".tmp")]


def test_encoder_only_model_reports_unused_heads():
  model = albert_tf.AlbertModel(_fixture_config())
  report = albert_tf.load_original_checkpoint(model, FIXTURE_CKPT)
  assert not report.missing
  assert report.unused == sorted(n for n in read_tf1_checkpoint(FIXTURE_CKPT)
                                 if n.startswith("cls/") and not n.endswith(("adam_m", "adam_v")))


def test_shape_mismatch_names_variable_and_shapes():
  model = albert_tf.AlbertModel(_fixture_config(vocab_size=999))
  with pytest.raises(ValueError,
                     match=r"bert/embeddings/word_embeddings.*\[1000, 16\].*\[999, 16\]"):
    albert_tf.load_original_checkpoint(model, FIXTURE_CKPT)


def test_missing_encoder_variables_are_named():
  model = albert_tf.AlbertModel(_fixture_config(num_hidden_groups=2))
  with pytest.raises(KeyError, match="group_1/inner_group_0"):
    albert_tf.load_original_checkpoint(model, FIXTURE_CKPT)


def test_init_from_group0():
  model = albert_tf.AlbertModel(_fixture_config(num_hidden_groups=3, inner_group_num=1))
  report = albert_tf.load_original_checkpoint(model, FIXTURE_CKPT, init_from_group0=True)
  assert not report.missing and len(report.from_group0) == 2 * 16
  g = model.transformer.groups
  np.testing.assert_array_equal(g[2][0].intermediate.kernel.numpy(),
                                g[0][0].intermediate.kernel.numpy())
  reader = tf.train.load_checkpoint(FIXTURE_CKPT)
  np.testing.assert_array_equal(
      g[1][0].attention.query.kernel.numpy(),
      reader.get_tensor("bert/encoder/transformer/group_0/inner_group_0/attention_1/self/query/kernel"))


def test_missing_heads_are_reported_not_fatal(tmp_path):
  cfg = dict(vocab_size=30, embedding_size=8, hidden_size=8, num_hidden_layers=1,
             num_attention_heads=2, intermediate_size=8, max_position_embeddings=8,
             type_vocab_size=2, num_hidden_groups=1, inner_group_num=1)
  weights = ref.random_weights(cfg, np.random.default_rng(0), with_heads=False)
  prefix = write_tf1_checkpoint(str(tmp_path / "enc"), dict(weights, **{
      "bert/embeddings/word_embeddings/adam_m": weights["bert/embeddings/word_embeddings"],
      "global_step": np.int64(3)}))
  model = albert_tf.AlbertPretrainer(albert_tf.AlbertConfig.from_dict(cfg))
  report = albert_tf.load_original_checkpoint(model, prefix)
  assert all(n.startswith("cls/") for n in report.missing) and len(report.missing) == 7
  assert report.unused == []


def test_bad_paths(tmp_path):
  model = albert_tf.AlbertModel(_fixture_config())
  with pytest.raises(FileNotFoundError, match="checkpoint not found"):
    albert_tf.load_original_checkpoint(model, str(tmp_path / "model.ckpt-1"))
  with pytest.raises(FileNotFoundError, match="no checkpoint found in directory"):
    albert_tf.load_original_checkpoint(model, str(tmp_path))


def test_our_checkpoints_hold_every_weight_and_load_into_encoder_or_pretrainer(tmp_path):
  config = _fixture_config(num_hidden_groups=2, inner_group_num=2)
  model = albert_tf.AlbertPretrainer(config)
  parts = albert_tf.checkpoints.model_parts(model)
  prefix = tf.train.Checkpoint(**parts).write(str(tmp_path / "ours"))
  saved = [n for n, _ in tf.train.list_variables(prefix) if n.endswith("VARIABLE_VALUE")]
  assert len(saved) == len(model.trainable_variables) == 80
  assert not albert_tf.checkpoints.is_original_layout(prefix)

  encoder = albert_tf.AlbertModel(config)
  albert_tf.load_checkpoint(encoder, prefix)
  pretrainer = albert_tf.AlbertPretrainer(config)
  albert_tf.load_checkpoint(pretrainer, prefix)
  source = layout.original_variable_map(model)
  for target in (layout.original_variable_map(encoder), layout.original_variable_map(pretrainer)):
    for name, var in target.items():
      np.testing.assert_array_equal(var.numpy(), source[name].numpy(), err_msg=name)
  # The original layout is detected too.
  report = albert_tf.load_checkpoint(albert_tf.AlbertModel(_fixture_config()), FIXTURE_CKPT)
  assert isinstance(report, albert_tf.checkpoints.LoadReport) and not report.missing


# -- our own (object-based) checkpoints -----------------------------------------------------------
TINY = dict(vocab_size=30, embedding_size=8, hidden_size=8, num_hidden_layers=2,
            num_attention_heads=2, intermediate_size=8, max_position_embeddings=8,
            type_vocab_size=2)
PRETRAINER_HEADS = ["masked_lm/output_bias", "masked_lm/transform/bias",
                    "masked_lm/transform/kernel", "masked_lm/transform_layer_norm/beta",
                    "masked_lm/transform_layer_norm/gamma", "sentence_order/output_bias",
                    "sentence_order/output_weights"]


def _tiny(**changes):
  return albert_tf.AlbertConfig.from_dict(dict(TINY, **changes))


def _runner_checkpoint(model, prefix):
  """Writes `model` as the training Runner does: its parts, an optimizer with slots, the step.
  The optimizer also tracks the weights, so some are keyed under optimizer/... in the file."""
  optimizer = tf.keras.optimizers.Adam()
  optimizer.build(model.trainable_variables)
  return tf.train.Checkpoint(**albert_tf.checkpoints.model_parts(model), optimizer=optimizer,
                             global_step=tf.Variable(7, dtype=tf.int64)).write(prefix)


@pytest.mark.parametrize("changes,first_missing", [
    ({"inner_group_num": 2}, "bert/encoder/transformer/group_0/inner_group_1/LayerNorm/beta"),
    ({"num_hidden_groups": 2}, "bert/encoder/transformer/group_1/inner_group_0/LayerNorm/beta"),
])
def test_ours_into_a_bigger_config_names_the_missing_variables(tmp_path, changes, first_missing):
  prefix = _runner_checkpoint(albert_tf.AlbertPretrainer(_tiny()), str(tmp_path / "ckpt"))
  model = albert_tf.AlbertPretrainer(_tiny(**changes))
  before = model.encoder.embeddings.word_embeddings.numpy()
  with pytest.raises(KeyError) as raised:
    albert_tf.load_checkpoint(model, prefix)
  message = str(raised.value)
  assert (f"checkpoint {prefix} lacks 16 encoder variables the model has: {first_missing},"
          in message)
  assert "(+6 more)" in message
  assert "The albert_config does not match the config the checkpoint was trained with" in message
  # Checked before assigning anything: the model is not left half loaded.
  np.testing.assert_array_equal(model.encoder.embeddings.word_embeddings.numpy(), before)


def test_ours_shape_mismatch_names_variable_and_shapes(tmp_path):
  prefix = _runner_checkpoint(albert_tf.AlbertModel(_tiny()), str(tmp_path / "ckpt"))
  # embedding_size 4 != hidden_size 8: the model also gets a projection the checkpoint lacks.
  model = albert_tf.AlbertModel(_tiny(embedding_size=4))
  with pytest.raises(ValueError, match=r"^shape mismatch for bert/embeddings/word_embeddings: "
                     r"checkpoint .*/ckpt has \[30, 8\], the model expects \[30, 4\] \(does the "
                     r"albert_config match"):
    albert_tf.load_checkpoint(model, prefix)


def test_ours_init_from_group0(tmp_path):
  source = albert_tf.AlbertModel(_tiny())
  prefix = _runner_checkpoint(source, str(tmp_path / "ckpt"))
  model = albert_tf.AlbertModel(_tiny(num_hidden_groups=2))
  report = albert_tf.load_checkpoint(model, prefix, init_from_group0=True)
  assert len(report.from_group0) == 16 and not report.missing and not report.unused
  expected = source.transformer.groups[0][0].attention.query.kernel.numpy()
  for group in model.transformer.groups:
    np.testing.assert_array_equal(group[0].attention.query.kernel.numpy(), expected)


def test_ours_pretrainer_into_classifier_loads_encoder_and_reports_head(tmp_path, caplog):
  pretrainer = albert_tf.AlbertPretrainer(_tiny())
  prefix = _runner_checkpoint(pretrainer, str(tmp_path / "ckpt"))
  classifier = albert_tf.AlbertClassifier(_tiny(), num_labels=3)
  head = classifier.classifier.output_weights.numpy()

  with caplog.at_level(logging.INFO, logger="albert_tf"):
    restore_or_initialize(None, classifier, str(tmp_path / "fresh_output"), prefix)
  log = [record.getMessage() for record in caplog.records]
  source = layout.encoder_variables(pretrainer.encoder)
  target = layout.original_variable_map(classifier)
  for name, variable in source.items():
    np.testing.assert_array_equal(target[name].numpy(), variable.numpy(), err_msg=name)
  np.testing.assert_array_equal(classifier.classifier.output_weights.numpy(), head)
  assert log == [f"initialised from {prefix}: loaded {len(source)} variables from {prefix}; "
                 "missing 2: output_bias, output_weights; unused 7: " + ", ".join(PRETRAINER_HEADS)]

  report = albert_tf.load_checkpoint(classifier, prefix)
  assert report.loaded == sorted(source) and report.unused == PRETRAINER_HEADS
  assert report.missing == ["output_bias", "output_weights"]


def test_export_saved_model_rejects_a_config_that_does_not_match(tmp_path):
  model = albert_tf.AlbertPretrainer(_fixture_config())
  prefix = tf.train.Checkpoint(**albert_tf.checkpoints.model_parts(model)).write(
      str(tmp_path / "ours" / "ckpt"))
  config = str(tmp_path / "albert_config.json")
  _fixture_config(inner_group_num=2).to_json_file(config)
  spm = os.path.join(os.path.dirname(ORIGINAL_MODEL), "original_pretraining_data",
                     "30k-clean-tiny.model")
  result = run_binary("export_saved_model", [
      f"--albert_config_file={config}", f"--init_checkpoint={prefix}", f"--spm_model_file={spm}",
      "--max_seq_length=64", f"--export_dir={tmp_path / 'serving'}"], check=False, timeout=300)
  assert result.returncode != 0
  assert "bert/encoder/transformer/group_0/inner_group_1/" in result.stderr
  assert "The albert_config does not match" in result.stderr
  assert not os.path.exists(tmp_path / "serving")
