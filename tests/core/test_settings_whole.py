"""Settings that travel whole: the exporters take the tokenizer as one TokenizerSettings (0.3's
spread-out arguments still work, with a DeprecationWarning), PretrainingSettings and
create_pretraining_data's GenerationSettings hold their tokenizer as the fine-tuning settings
do, and every job and export refuses a sequence length longer than the config's
max_position_embeddings with one message."""

import dataclasses
import json
import os
import pickle
import types
import warnings

import pytest
import tensorflow as tf

import albert_tf
from albert_tf.checkpoints import hf_config
from albert_tf.core import errors, settings
from albert_tf.core.config import check_max_seq_length
from albert_tf.core.settings import TokenizerSettings
from albert_tf.data.pretraining_data import GenerationSettings
from albert_tf.export import portable
from albert_tf.export.hf import export_hf_layout
from albert_tf.export.released import export_released_layout
from albert_tf.export.saved_model import IdsServingModule
from albert_tf.export.tfhub import HubEncoder
from albert_tf.export.tfhub_preprocessing import HubPreprocessor
from albert_tf.tasks.classifier.export import ClassifierServingModule
from albert_tf.tasks.ner.export import NerServingModule
from albert_tf.tasks.ner.model import AlbertTokenClassifier
from albert_tf.tasks.pretraining import job as pretraining_job
from albert_tf.tasks.squad.export import SquadServingModule
from albert_tf.tokenization import FullTokenizer
from albert_tf.tokenization.in_graph_cmrc import CmrcInGraphTokenizer
from albert_tf.training.job import Job
from helpers import ORIGINAL_MODEL, TESTDATA

CONFIG = os.path.join(ORIGINAL_MODEL, "albert_config.json")  # 64 positions, 1,000 pieces
CKPT0 = os.path.join(ORIGINAL_MODEL, "model.ckpt-0")
SPM = os.path.join(TESTDATA, "original_pretraining_data", "30k-clean-tiny.model")
VOCAB = os.path.join(TESTDATA, "original_wordpiece", "vocab.txt")  # 1,155 WordPiece entries
HF_ENCODER = os.path.join(TESTDATA, "hf_albert", "encoder")
MODEL = settings.ModelSettings(albert_config_file=CONFIG, max_seq_length=32)


def _config(vocab_size=1000):
  config = albert_tf.AlbertConfig.from_json_file(CONFIG)
  config.vocab_size = vocab_size
  return config


def _too_long(source, length=65, flag="--max_seq_length"):
  """The one message of a sequence length over the fixture config's 64 positions."""
  return (f"{flag}={length}: cannot use sequence length {length} because the ALBERT model was "
          f"only trained up to sequence length 64 (max_position_embeddings in {source}); give "
          f"{flag}=64 or less")


def _pretraining(**fields):
  return settings.PretrainingSettings(output_dir="o", input_file="i", model=MODEL, **fields)


# -- PretrainingSettings.tokenizer --------------------------------------------------------------
def test_pretraining_settings_take_the_tokenizer_from_the_flags_whole():
  flags = types.SimpleNamespace(output_dir="o", input_file="i", spm_model_file=SPM,
                                vocab_file=None, do_lower_case=False, max_seq_length=32)
  made = settings.from_values(settings.PretrainingSettings, flags)
  assert made.tokenizer == TokenizerSettings(spm_model_file=SPM, do_lower_case=False)
  assert "spm_model_file" not in {f.name for f in dataclasses.fields(made)}


def test_the_old_spm_model_file_argument_warns_and_lands_in_the_tokenizer():
  with pytest.warns(DeprecationWarning, match=r"tokenizer=TokenizerSettings") as caught:
    made = _pretraining(spm_model_file=SPM)
  assert caught[0].filename == __file__  # the warning points at the caller
  assert made.tokenizer == TokenizerSettings(spm_model_file=SPM)
  with pytest.warns(DeprecationWarning, match=r"PretrainingSettings\.tokenizer\.spm_model_file"):
    assert made.spm_model_file == SPM
  # Over a given tokenizer, it sets only the file.
  with pytest.warns(DeprecationWarning):
    made = _pretraining(tokenizer=TokenizerSettings(do_lower_case=False), spm_model_file=SPM)
  assert made.tokenizer == TokenizerSettings(spm_model_file=SPM, do_lower_case=False)


def test_replace_keeps_a_replacing_tokenizer_and_warns_about_nothing():
  made = _pretraining(tokenizer=TokenizerSettings(spm_model_file=SPM))
  with warnings.catch_warnings():
    warnings.simplefilter("error")
    other = dataclasses.replace(made, tokenizer=TokenizerSettings(vocab_file=VOCAB))
    same = dataclasses.replace(made, masked_lm_budget=0.15)
  assert other.tokenizer == TokenizerSettings(vocab_file=VOCAB)
  assert same.tokenizer == made.tokenizer and same.masked_lm_budget == 0.15
  with pytest.warns(DeprecationWarning):
    moved = dataclasses.replace(made, spm_model_file="other.model")
  assert moved.tokenizer.spm_model_file == "other.model"


def test_dynamic_masking_reads_the_special_ids_of_the_settings_tokenizer(monkeypatch):
  opened = []

  class Tokenizer:
    """Records the SentencePiece model the job opens; answers ids unlike ALBERT's 2, 3, 4."""

    def __init__(self, spm_model_file):
      opened.append(spm_model_file)

    def convert_tokens_to_ids(self, tokens):
      return [{"[CLS]": 7, "[SEP]": 8, "[MASK]": 9}[token] for token in tokens]

  monkeypatch.setattr(pretraining_job, "FullTokenizer", Tokenizer)
  job = types.SimpleNamespace(config=_config(), settings=_pretraining(
      masked_lm_budget=0.15, tokenizer=TokenizerSettings(spm_model_file=SPM)))
  masking = pretraining_job.PretrainingJob._dynamic_masking(job)
  assert opened == [SPM]
  assert (masking.cls_id, masking.sep_id, masking.mask_id) == (7, 8, 9)


# -- GenerationSettings.tokenizer ---------------------------------------------------------------
def test_generation_settings_hold_the_tokenizer_whole():
  made = GenerationSettings(tokenizer=TokenizerSettings(vocab_file=VOCAB, do_lower_case=False))
  assert not {"vocab_file", "spm_model_file", "do_lower_case"} & {
      f.name for f in dataclasses.fields(made)}
  # What Beam sends its workers.
  assert pickle.loads(pickle.dumps(made)) == made
  # Cased, as the settings say: the vocabulary has no upper-case pieces.
  assert FullTokenizer.from_settings(made.tokenizer).tokenize("hello World") == [
      "h", "##e", "##l", "##l", "##o", "[UNK]"]


def test_the_old_generation_fields_warn_and_land_in_the_tokenizer():
  with pytest.warns(DeprecationWarning, match=r"GenerationSettings\(vocab_file=\.\.\., "
                    r"do_lower_case=\.\.\.\) is deprecated.*tokenizer=TokenizerSettings") as caught:
    made = GenerationSettings(vocab_file=VOCAB, do_lower_case=False, spm_model_file=None,
                              dupe_factor=1)
  assert caught[0].filename == __file__
  assert made.tokenizer == TokenizerSettings(vocab_file=VOCAB, do_lower_case=False)
  assert made.dupe_factor == 1
  with pytest.warns(DeprecationWarning, match=r"GenerationSettings\.tokenizer\.do_lower_case"):
    assert made.do_lower_case is False
  shared = made.tokenizer
  with pytest.warns(DeprecationWarning, match=r"GenerationSettings\.tokenizer\.spm_model_file"):
    made.spm_model_file = SPM
  assert made.tokenizer == TokenizerSettings(vocab_file=VOCAB, spm_model_file=SPM,
                                             do_lower_case=False)
  assert shared.spm_model_file is None  # a new tokenizer, not the old one changed
  with warnings.catch_warnings():
    warnings.simplefilter("error")
    other = dataclasses.replace(made, tokenizer=TokenizerSettings(spm_model_file=SPM))
  assert other.tokenizer == TokenizerSettings(spm_model_file=SPM)


# -- the exporters take a TokenizerSettings -----------------------------------------------------
def test_a_serving_module_takes_the_tokenizer_whole():
  pretrainer = albert_tf.AlbertPretrainer(_config(1155))
  with warnings.catch_warnings():
    warnings.simplefilter("error")
    module = IdsServingModule(pretrainer, TokenizerSettings(vocab_file=VOCAB, do_lower_case=False),
                              max_seq_length=32)
  info = module.tokenization_info()
  assert info["vocab_file"].numpy().decode().endswith("vocab.txt")
  assert not info["do_lower_case"].numpy() and int(info["max_seq_length"]) == 32


def test_a_serving_module_takes_the_old_arguments_with_a_warning():
  with pytest.warns(DeprecationWarning, match=r"IdsServingModule\(spm_model_file=.*tokenizer="):
    module = IdsServingModule(albert_tf.AlbertPretrainer(_config()), SPM, False, 24)
  assert (module.do_lower_case, module.max_seq_length) == (False, 24)


def test_the_task_modules_take_the_tokenizer_whole(tmp_path):
  wordpiece = TokenizerSettings(vocab_file=VOCAB, do_lower_case=False)
  config = _config(1155)
  with warnings.catch_warnings():
    warnings.simplefilter("error")
    classifier = ClassifierServingModule(albert_tf.AlbertClassifier(config, num_labels=2),
                                         wordpiece, ["a", "b"], True, max_seq_length=24,
                                         threshold=0.7)
    squad = SquadServingModule(albert_tf.AlbertSpanLabeler(config), wordpiece, 32, doc_stride=8,
                               max_query_length=8)
    labels = tmp_path / "label_list.txt"
    labels.write_text("O\nB-X\n")
    ner = NerServingModule(AlbertTokenClassifier(config, num_labels=2), ["O", "B-X"],
                           str(labels), wordpiece, max_seq_length=16, doc_stride=4)
  assert (classifier.do_lower_case, classifier.max_seq_length) == (False, 24)
  assert float(classifier.threshold) == pytest.approx(0.7)
  # A WordPiece SQuAD export tokenizes as the CMRC 2018 baseline's features.
  assert isinstance(squad.tokenizer, CmrcInGraphTokenizer) and squad.max_seq_length == 32
  assert (ner.do_lower_case, ner.max_seq_length, ner.doc_stride) == (False, 16, 4)


def test_the_classifier_module_takes_the_jobs_old_positional_call():
  """run_classifier's call of 0.3 (tokenizer fields between the other arguments) keeps its
  meaning: do_lower_case is not taken for max_seq_length."""
  with pytest.warns(DeprecationWarning, match="ClassifierServingModule"):
    module = ClassifierServingModule(albert_tf.AlbertClassifier(_config(), num_labels=2), SPM,
                                     ["a", "b"], False, False, 40, 0.25, vocab_file=None)
  assert (module.do_lower_case, module.max_seq_length, module.pair) == (False, 40, False)
  assert float(module.threshold) == pytest.approx(0.25)


def test_the_tf_hub_objects_take_the_tokenizer_whole():
  with warnings.catch_warnings():
    warnings.simplefilter("error")
    encoder = HubEncoder(albert_tf.AlbertModel(_config(1155)),
                         TokenizerSettings(vocab_file=VOCAB, do_lower_case=False))
    preprocessor = HubPreprocessor(TokenizerSettings(spm_model_file=SPM), 16)
  assert encoder.vocab_file.asset_path.numpy().decode().endswith("vocab.txt")
  assert not encoder.do_lower_case.numpy()
  assert preprocessor.sp_model_file.asset_path.numpy().decode().endswith(".model")
  assert preprocessor.do_lower_case.numpy()
  assert preprocessor.serving_default(tf.constant(["hello world"]))["input_word_ids"].shape == (
      1, 16)
  with pytest.warns(DeprecationWarning, match=r"HubEncoder\(spm_model_file="):
    old = HubEncoder(albert_tf.AlbertModel(_config()), SPM, None, False)
  assert not old.do_lower_case.numpy()


def test_the_checkpoint_layouts_take_the_tokenizer_whole(tmp_path):
  spiece = os.path.join(HF_ENCODER, "spiece.model")
  tokenizer = TokenizerSettings(spm_model_file=spiece, do_lower_case=False)
  with warnings.catch_warnings():
    warnings.simplefilter("error")
    out = export_hf_layout(hf_config.from_hf_config(HF_ENCODER), HF_ENCODER,
                           str(tmp_path / "hf"), tokenizer)
    prefix = export_released_layout(_config(), CKPT0, str(tmp_path / "released"),
                                    TokenizerSettings(spm_model_file=SPM))
  with open(os.path.join(out, "tokenizer_config.json"), encoding="utf-8") as f:
    assert json.load(f)["do_lower_case"] is False
  assert os.path.isfile(os.path.join(out, "spiece.model"))
  assert os.path.basename(SPM) in os.listdir(os.path.dirname(prefix))
  with pytest.warns(DeprecationWarning, match=r"export_hf_layout\(spm_model_file="):
    old = export_hf_layout(hf_config.from_hf_config(HF_ENCODER), HF_ENCODER,
                           str(tmp_path / "hf_old"), spiece, False)
  with open(os.path.join(old, "tokenizer_config.json"), encoding="utf-8") as f:
    assert json.load(f)["do_lower_case"] is False


# -- one check of the sequence length -----------------------------------------------------------
def test_the_check_names_the_flag_the_limit_and_where_the_config_came_from():
  check_max_seq_length(64, _config(), CONFIG)  # the limit itself is fine
  with pytest.raises(errors.UsageError) as e:
    check_max_seq_length(65, _config(), CONFIG)
  assert str(e.value) == _too_long(CONFIG)
  with pytest.raises(errors.UsageError) as e:
    check_max_seq_length(100, _config(), "the released models' configs",
                         flag="--default_seq_length")
  assert str(e.value) == _too_long("the released models' configs", 100, "--default_seq_length")


def test_a_job_refuses_a_sequence_length_over_the_configs():
  job_settings = dataclasses.replace(_pretraining(),
                                     model=dataclasses.replace(MODEL, max_seq_length=65))
  with pytest.raises(errors.UsageError) as e:
    Job(job_settings)
  assert str(e.value) == _too_long(CONFIG)


@pytest.mark.parametrize("config_file", [CONFIG, None])
def test_a_serving_module_refuses_a_sequence_length_over_the_configs(config_file):
  with pytest.raises(errors.UsageError) as e:
    IdsServingModule(albert_tf.AlbertPretrainer(_config()), TokenizerSettings(spm_model_file=SPM),
                     max_seq_length=65, config_file=config_file)
  assert str(e.value) == _too_long(config_file or "the exported model's config")


def test_the_portable_exports_refuse_a_sequence_length_over_the_configs():
  with pytest.raises(errors.UsageError) as e:
    portable.serving_function(albert_tf.AlbertModel(_config()), 65)
  assert str(e.value) == _too_long("the exported model's config")
  with pytest.raises(errors.UsageError) as e:
    portable.check_serving_length(_config(), 65, CONFIG)
  assert str(e.value) == _too_long(CONFIG)
  with pytest.raises(errors.UsageError, match="--max_seq_length=0: must be at least 1"):
    portable.check_serving_length(_config(), 0, CONFIG)
