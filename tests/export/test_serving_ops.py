"""Every export's ops are registered by TF 2.12 with tensorflow-text 2.12.1, what
tensorflow/serving 2.12.0 links (tests/testdata/serving_ops_tf2.12.txt): newer ops would fail to
load there with "Op type not registered"."""

import os

import pytest
import tensorflow as tf

import albert_tf
from albert_tf.tasks.classifier.export import ClassifierServingModule
from albert_tf.core.settings import TokenizerSettings
from albert_tf.export.saved_model import ServingModule
from albert_tf.export.serving_ops import ops_missing_from, read_allowlist, saved_model_ops
from albert_tf.tasks.squad.export import SquadServingModule
import warm_binaries
from helpers import ORIGINAL_MODEL, REPO_ROOT, TESTDATA

CONFIG = os.path.join(ORIGINAL_MODEL, "albert_config.json")
SPM = os.path.join(TESTDATA, "original_pretraining_data", "30k-clean-tiny.model")
ALLOWLIST = os.path.join(TESTDATA, "serving_ops_tf2.12.txt")
VOCAB = os.path.join(TESTDATA, "original_wordpiece", "vocab.txt")  # 1,155 WordPiece entries


def _config(**changes):
  config = albert_tf.AlbertConfig.from_json_file(CONFIG)
  for name, value in changes.items():
    setattr(config, name, value)
  return config


EXPORTS = {
    "pretraining": lambda: ServingModule(albert_tf.AlbertPretrainer(_config()),
                                         TokenizerSettings(spm_model_file=SPM),
                                         max_seq_length=32),
    "classifier_pair": lambda: ClassifierServingModule(
        albert_tf.AlbertClassifier(_config(), 3), TokenizerSettings(spm_model_file=SPM),
        ["a", "b", "c"], pair=True,
        max_seq_length=32),
    "regression_single": lambda: ClassifierServingModule(
        albert_tf.AlbertClassifier(_config(), 1), TokenizerSettings(spm_model_file=SPM), [None],
        pair=False, max_seq_length=32, threshold=0.5),
    "classifier_wordpiece": lambda: ClassifierServingModule(
        albert_tf.AlbertClassifier(_config(vocab_size=1155), 2),
        TokenizerSettings(vocab_file=VOCAB), ["0", "1"], pair=True, max_seq_length=32),
    "pretraining_wordpiece": lambda: ServingModule(
        albert_tf.AlbertPretrainer(_config(vocab_size=1155)), TokenizerSettings(vocab_file=VOCAB),
        max_seq_length=32),
    "squad_v1": lambda: SquadServingModule(albert_tf.AlbertSpanLabeler(_config()),
                                           TokenizerSettings(spm_model_file=SPM),
                                           max_seq_length=48, doc_stride=16),
    "squad_v2": lambda: SquadServingModule(albert_tf.AlbertSquadV2(_config(), start_n_top=2,
                                                                  end_n_top=2),
                                           TokenizerSettings(spm_model_file=SPM),
                                           max_seq_length=48, doc_stride=16, v2=True),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(EXPORTS))
def test_exports_use_only_ops_that_serving_2_12_registers(name, tmp_path):
  module = EXPORTS[name]()
  path = str(tmp_path / name)
  tf.saved_model.save(module, path, signatures=module.signatures())
  ops = saved_model_ops(path)
  # The listing reaches into the signatures' functions: the tokenizer's ops are there.
  tokenizer_op = ("WordpieceTokenizeWithOffsets" if "wordpiece" in name
                  else "SentencepieceTokenizeOp")
  assert tokenizer_op in ops and "NormalizeUTF8" in ops
  assert ops_missing_from(path, ALLOWLIST) == []
  # And each answers an empty batch with empty outputs.
  serve = tf.saved_model.load(path).signatures["serving_default"]
  names = [spec.name for spec in serve.structured_input_signature[1].values()]
  outputs = serve(**{name: tf.zeros([0], tf.string) for name in names})
  assert all(value.shape[0] == 0 for value in outputs.values() if value.shape.rank), outputs


def test_allowlist_is_tf_2_12_with_its_text_ops():
  allowed = read_allowlist(ALLOWLIST)
  assert len(allowed) == 1880
  assert {"SentencepieceTokenizeOp", "RegexSplitWithOffsets", "WordpieceTokenizeWithOffsets",
          "BatchMatMulV2", "RaggedTensorToTensor"} <= allowed
  # tensorflow-text 2.12.1's pip package does not register the round-robin trimmer.
  assert "TFText>RoundRobinTrim" not in allowed


@pytest.mark.slow  # a SavedModel export and two runs of the tool
def test_tool_reports_ops_missing_from_an_allowlist(tmp_path):
  module = tf.Module()
  module.f = tf.function(lambda x: {"y": tf.strings.regex_replace(x, "a", "b")},
                         input_signature=[tf.TensorSpec([None], tf.string)])
  path = str(tmp_path / "m")
  tf.saved_model.save(module, path, signatures={"serving_default": module.f})
  allowlist = tmp_path / "allow.txt"
  allowlist.write_text("# only identity\nIdentity\n")
  # From the suite's warm start (tests/warm_binaries.py): the tool's lines and exit status.
  def tool(listing):
    return warm_binaries.run_script(os.path.join(REPO_ROOT, "tools", "serving_ops.py"),
                                    [f"--saved_model={path}", f"--allowlist={listing}"],
                                    timeout=300)
  result = tool(allowlist)
  assert result.returncode == 1 and "StaticRegexReplace" in result.stdout, result.stderr[-3000:]
  result = tool(ALLOWLIST)
  assert result.returncode == 0 and "all registered" in result.stdout, result.stderr[-3000:]
