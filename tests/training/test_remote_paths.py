"""Paths with a scheme (gs://, hdfs://) go through albert_tf.core.io to tf.io.gfile: every file the
binaries read or write, on TF's in-memory filesystem (ram://), in-process. What is read from
ram:// equals what is read from the local copy, and what is written there equals, byte for byte,
what is written locally."""

import json
import os
import tempfile
import uuid

import numpy as np
import pytest
import tensorflow as tf

import albert_tf
from albert_tf.core import io
from albert_tf.checkpoints import checkpoint_global_step, load_checkpoint, save_original_checkpoint
from albert_tf.checkpoints.layout import original_variable_map
from albert_tf.core.settings import TokenizerSettings
from albert_tf.export.released import export_released_layout
from albert_tf.export.saved_model import ServingModule, export_saved_model
from albert_tf.tasks.classifier import features as classifier_data
from albert_tf.tasks.classifier import data as glue
from albert_tf.tasks.race import data as race
from albert_tf.finetuning.evaluation import BestCheckpointTracker
from albert_tf.training.checkpointing import checkpoint_steps
from albert_tf.tasks.squad.postprocess import write_json
from albert_tf.tokenization import FullTokenizer, load_vocab
from albert_tf.tokenization.in_graph import InGraphTokenizer
from albert_tf.tokenization.vocab_check import spm_vocab_size, wordpiece_vocab_size
from albert_tf.tasks.squad import data as squad_data
from helpers import ORIGINAL_MODEL, REPO_ROOT, TESTDATA

CONFIG = os.path.join(ORIGINAL_MODEL, "albert_config.json")
CKPT0 = os.path.join(ORIGINAL_MODEL, "model.ckpt-0")
SPM = os.path.join(TESTDATA, "original_pretraining_data", "30k-clean-tiny.model")
FINETUNING = os.path.join(TESTDATA, "original_finetuning")
TEXT = "Hello, World! The 9,000 quick brown foxes jumped over the lazy dogs."


def _local_entries():
  """Where a remote path mistaken for a local one would land (`ram:/...` under a relative
  directory, or os.path.abspath's)."""
  places = {os.getcwd(), REPO_ROOT, os.path.join(REPO_ROOT, "tests"), tempfile.gettempdir()}
  return {os.path.join(p, name) for p in places for name in os.listdir(p)}


@pytest.fixture(scope="module", autouse=True)
def nothing_named_ram_locally(tmp_path_factory):
  before = _local_entries()
  yield
  names = sorted(p for p in _local_entries() - before if "ram:" in os.path.basename(p))
  base = str(tmp_path_factory.getbasetemp())
  names += sorted(os.path.join(d, n) for d, dirs, files in os.walk(base) for n in dirs + files
                  if "ram:" in n)
  assert not names, f"remote paths were written locally: {names}"


@pytest.fixture
def ram():
  """A fresh ram:// directory, removed afterwards."""
  root = f"ram://albert_tf_test_{uuid.uuid4().hex}"
  tf.io.gfile.makedirs(root)
  yield root
  tf.io.gfile.rmtree(root)


def _upload(local, remote):
  """Copies a local file or tree to `remote` (with TF, independently of albert_tf.core.io)."""
  if os.path.isfile(local):
    tf.io.gfile.makedirs(os.path.dirname(remote))
    tf.io.gfile.copy(local, remote, overwrite=True)
    return remote
  for directory, _, files in os.walk(local):
    relative = os.path.relpath(directory, local)
    target = remote if relative == "." else f"{remote}/{relative}"
    tf.io.gfile.makedirs(target)
    for name in files:
      tf.io.gfile.copy(os.path.join(directory, name), os.path.join(target, name))
  return remote


def _read(path):
  with tf.io.gfile.GFile(path, "rb") as f:
    return f.read()


def test_config_to_and_from_ram(ram, tmp_path):
  config = albert_tf.AlbertConfig.from_json_file(_upload(CONFIG, f"{ram}/in/albert_config.json"))
  assert config == albert_tf.AlbertConfig.from_json_file(CONFIG)
  config.to_json_file(str(tmp_path / "albert_config.json"))
  config.to_json_file(f"{ram}/out/albert_config.json")  # a directory that does not exist yet
  assert _read(f"{ram}/out/albert_config.json") == (tmp_path / "albert_config.json").read_bytes()
  assert io.listdir(f"{ram}/out") == ["albert_config.json"]  # no temporary left
  # At the root of the filesystem: os.path would split it into the local directory `ram:`.
  top = f"ram://albert_tf_test_{uuid.uuid4().hex}.json"
  try:
    config.to_json_file(top)
    assert albert_tf.AlbertConfig.from_json_file(top) == config
  finally:
    tf.io.gfile.remove(top)
  with pytest.raises(FileNotFoundError, match="albert config file not found"):
    albert_tf.AlbertConfig.from_json_file(f"{ram}/missing.json")


@pytest.fixture(scope="module")
def pretrainer():
  config = albert_tf.AlbertConfig.from_json_file(CONFIG)
  model = albert_tf.AlbertPretrainer(config)
  albert_tf.load_original_checkpoint(model, CKPT0)
  return model


def _assert_same_weights(a, b):
  for (name, x), y in zip(original_variable_map(a).items(), original_variable_map(b).values(),
                          strict=True):
    np.testing.assert_array_equal(x.numpy(), y.numpy(), err_msg=name)


def test_original_checkpoint_to_and_from_ram(ram, tmp_path, pretrainer):
  prefix = save_original_checkpoint(pretrainer, f"{ram}/ckpt/model.ckpt-best", global_step=7)
  assert prefix == f"{ram}/ckpt/model.ckpt-best"
  assert io.listdir(f"{ram}/ckpt") == [  # the temporary directory is gone
      "checkpoint", "model.ckpt-best.data-00000-of-00001", "model.ckpt-best.index"]
  # The state file names the checkpoint relative to its directory, as locally.
  local = save_original_checkpoint(pretrainer, str(tmp_path / "model.ckpt-best"), global_step=7)
  assert _read(f"{ram}/ckpt/checkpoint") == (tmp_path / "checkpoint").read_bytes()
  assert _read(prefix + ".index") == _read(local + ".index")
  assert checkpoint_global_step(prefix) == 7
  for path in (prefix, f"{ram}/ckpt"):  # a prefix, or a directory's latest
    loaded = albert_tf.AlbertPretrainer(pretrainer.config)
    report = load_checkpoint(loaded, path)
    assert report.path == prefix and not report.missing and not report.unused
    _assert_same_weights(pretrainer, loaded)


def test_sentencepiece_and_vocab_files_from_ram(ram):
  remote = _upload(SPM, f"{ram}/spm/30k-clean-tiny.model")
  local_tokenizer = FullTokenizer(spm_model_file=SPM)
  remote_tokenizer = FullTokenizer(spm_model_file=remote)
  tokens = local_tokenizer.tokenize(TEXT)
  assert remote_tokenizer.tokenize(TEXT) == tokens
  assert (remote_tokenizer.convert_tokens_to_ids(tokens)
          == local_tokenizer.convert_tokens_to_ids(tokens))
  assert remote_tokenizer.vocab == local_tokenizer.vocab
  assert spm_vocab_size(remote) == spm_vocab_size(SPM)
  in_graph = InGraphTokenizer(remote).pieces(tf.constant([TEXT]))
  assert [p.decode() for p in in_graph.to_list()[0]] == tokens
  vocab = os.path.join(TESTDATA, "original_wordpiece", "vocab.txt")
  remote_vocab = _upload(vocab, f"{ram}/wordpiece/vocab.txt")
  assert load_vocab(remote_vocab) == load_vocab(vocab)
  assert wordpiece_vocab_size(remote_vocab) == wordpiece_vocab_size(vocab)
  wordpiece = FullTokenizer(vocab_file=remote_vocab)
  assert wordpiece.tokenize(TEXT) == FullTokenizer(vocab_file=vocab).tokenize(TEXT)
  with pytest.raises(FileNotFoundError, match="SentencePiece model not found"):
    FullTokenizer(spm_model_file=f"{ram}/spm/missing.model")


@pytest.fixture(scope="module")
def tokenizer():
  return FullTokenizer(spm_model_file=SPM)


def _fields(examples):
  return [vars(e) for e in examples]


def test_glue_examples_and_features_on_ram(ram, tmp_path, tokenizer):
  local = os.path.join(FINETUNING, "glue", "glue_data")
  remote = _upload(local, f"{ram}/glue_data")
  for task in sorted(glue.TASKS):
    processor = glue.processor(task)
    for split in processor.spec.files:
      if os.path.exists(os.path.join(local, processor.spec.directory,
                                     processor.spec.files[split])):
        assert (_fields(processor.get_examples(remote, split))
                == _fields(processor.get_examples(local, split))), (task, split)
  processor = glue.processor("mrpc")
  examples = processor.get_train_examples(remote)
  paths = [str(tmp_path / "mrpc_train.tf_record"), f"{ram}/features/mrpc_train.tf_record"]
  for path in paths:
    classifier_data.file_based_convert_examples_to_features(
        examples, processor.get_labels(), 48, tokenizer, path)
  assert _read(paths[1]) == _read(paths[0])
  assert io.listdir(f"{ram}/features") == ["mrpc_train.tf_record"]
  with pytest.raises(FileNotFoundError, match="data file not found"):
    processor.get_train_examples(f"{ram}/missing")


def test_squad_examples_features_and_predictions_on_ram(ram, tmp_path, tokenizer):
  for version in ("v1", "v2"):
    local = os.path.join(FINETUNING, "squad", version, "train.json")
    remote = _upload(local, f"{ram}/squad/{version}/train.json")
    examples = squad_data.read_squad_examples(remote, is_training=True)
    assert _fields(examples) == _fields(squad_data.read_squad_examples(local, is_training=True))
  paths = [str(tmp_path / "train.tf_record"), f"{ram}/features/train.tf_record"]
  for path in paths:
    writer = squad_data.FeatureWriter(path, is_training=True)
    squad_data.convert_examples_to_features(examples, tokenizer, 64, 32, 16, True,
                                       writer.process_feature, True)
    writer.close()
  assert _read(paths[1]) == _read(paths[0]) and writer.num_features
  predictions = {"q1": "an answer", "q2": ""}
  write_json(str(tmp_path / "predictions.json"), predictions)
  write_json(f"{ram}/out/predictions.json", predictions)
  assert _read(f"{ram}/out/predictions.json") == (tmp_path / "predictions.json").read_bytes()
  with pytest.raises(FileNotFoundError, match="SQuAD file not found"):
    squad_data.read_squad_examples(f"{ram}/squad/missing.json", is_training=False)


def test_race_examples_and_features_on_ram(ram, tmp_path, tokenizer):
  local = os.path.join(FINETUNING, "race")
  remote = _upload(os.path.join(local, "RACE"), f"{ram}/race/RACE")
  processor = race.RaceProcessor()
  for split in ("train", "dev", "test"):
    assert (_fields(processor.get_examples(f"{ram}/race", split))
            == _fields(processor.get_examples(local, split))), split
  examples = processor.get_examples(f"{ram}/race", "dev")
  paths = [str(tmp_path / "dev.tf_record"), f"{ram}/features/dev.tf_record"]
  for path in paths:
    race.file_based_convert_examples_to_features(examples, processor.get_labels(), 64,
                                                 tokenizer, path, 16)
  assert _read(paths[1]) == _read(paths[0])
  with pytest.raises(FileNotFoundError, match="RACE directory not found"):
    processor.get_examples(remote, "missing")


def test_best_checkpoint_tracker_on_ram(ram, tmp_path):
  evaluations = [(2, {"f1": 0.5, "loss": 1.25}), (4, {"f1": 0.25, "loss": 1.5}),
                 (6, {"f1": 0.75, "loss": 1.0})]
  for directory in (str(tmp_path), f"{ram}/output"):
    saved = []
    tracker = BestCheckpointTracker(directory, "f1")
    for step, result in evaluations[:2]:
      tracker.record(step, result, lambda step=step: saved.append(step))  # noqa: B023 -- bound by the default argument
    resumed = BestCheckpointTracker(directory, "f1")  # reads best_trial.txt back
    assert (resumed.last_step, resumed.best_step, resumed.best_value) == (4, 2, 0.5)
    step, result = evaluations[2]
    assert resumed.record(step, result, lambda: saved.append(step))  # noqa: B023 -- called within this iteration
    assert saved == [2, 6]
  for name in ("eval_results.txt", "best_trial.txt"):
    assert _read(f"{ram}/output/{name}") == (tmp_path / name).read_bytes(), name
  assert io.listdir(f"{ram}/output") == ["best_trial.txt", "eval_results.txt"]
  for step in (3, 12):
    tf.raw_ops.SaveV2(prefix=f"{ram}/output/model.ckpt-{step}", tensor_names=["x"],
                      shape_and_slices=[""], tensors=[tf.constant(1.0)])
  assert checkpoint_steps(f"{ram}/output") == {3: f"{ram}/output/model.ckpt-3",
                                                12: f"{ram}/output/model.ckpt-12"}


@pytest.mark.slow
def test_exports_to_ram(ram, pretrainer):
  spm = _upload(SPM, f"{ram}/spm/30k-clean-tiny.model")
  _upload(SPM[:-len(".model")] + ".vocab", f"{ram}/spm/30k-clean-tiny.vocab")
  module = ServingModule(pretrainer, TokenizerSettings(spm_model_file=spm), max_seq_length=16)
  final = export_saved_model(module, f"{ram}/serving/", 3)
  assert io.listdir(f"{ram}/serving") == ["3"]  # the staging directory moved, files and all
  assert {"saved_model.pb", "variables", "assets"} <= set(io.listdir(final))
  ids = np.array([[2, 10, 11, 3]], np.int32)
  served = tf.saved_model.load(final).signatures["tokens"](
      input_ids=tf.constant(ids), input_mask=tf.ones_like(ids), segment_ids=tf.zeros_like(ids))
  expected = pretrainer.encoder({"input_ids": ids, "input_mask": np.ones_like(ids),
                                 "segment_ids": np.zeros_like(ids)}, training=False)
  np.testing.assert_allclose(served["pooled_output"], expected["pooled_output"], atol=1e-5)

  prefix = export_released_layout(pretrainer.config, CKPT0, f"{ram}/released/albert_export",
                                  TokenizerSettings(spm_model_file=spm))
  assert io.listdir(f"{ram}/released") == ["albert_export"]
  assert io.listdir(f"{ram}/released/albert_export") == sorted([
      "albert_config.json", "model.ckpt-best.index", "model.ckpt-best.data-00000-of-00001",
      "30k-clean-tiny.model", "30k-clean-tiny.vocab"])
  assert _read(f"{ram}/released/albert_export/30k-clean-tiny.model") == _read(SPM)
  loaded = albert_tf.AlbertPretrainer(pretrainer.config)
  load_checkpoint(loaded, prefix)
  _assert_same_weights(pretrainer, loaded)
  with pytest.raises(FileExistsError):
    export_released_layout(pretrainer.config, CKPT0, f"{ram}/released/albert_export",
                           TokenizerSettings(spm_model_file=spm))


def test_remote_directory_moves_whole(ram):
  for name in ("a.txt", "sub/b.txt", "sub/deeper/c.txt"):
    io.write_text_atomically(f"{ram}/source/{name}", name)
  io.makedirs(f"{ram}/source/empty")
  io.rename(f"{ram}/source", f"{ram}/target")
  assert not io.exists(f"{ram}/source")
  assert io.listdir(f"{ram}/target") == ["a.txt", "empty", "sub"]
  assert io.read_text(f"{ram}/target/sub/deeper/c.txt") == "sub/deeper/c.txt"
  io.makedirs(f"{ram}/full")
  io.write_text_atomically(f"{ram}/full/x", "x")
  with pytest.raises(OSError):
    io.rename(f"{ram}/target", f"{ram}/full")


def test_remote_text_reads_as_local_ones(ram, tmp_path):
  data = "a\tb\r\nc\rd\ne\xe9\n".encode("utf-8") + b"\xff\n"
  (tmp_path / "f.txt").write_bytes(data)
  remote = _upload(str(tmp_path / "f.txt"), f"{ram}/f.txt")
  for kwargs in ({"errors": "ignore"}, {"errors": "ignore", "newline": ""}):
    with io.open_text(remote, **kwargs) as f:
      got = list(f)
    with io.open_text(str(tmp_path / "f.txt"), **kwargs) as f:
      assert got == list(f), kwargs
  with open(CONFIG, encoding="utf-8") as f:
    assert json.loads(io.read_text(_upload(CONFIG, f"{ram}/c.json"))) == json.load(f)


def test_pretraining_data_from_and_to_ram(ram, tmp_path):
  """create_pretraining_data reads a ram:// corpus (line by line through tf.io.gfile) and writes
  ram:// records: the same bytes as the local run."""
  from albert_tf.data.instances import InstanceOptions
  from albert_tf.data.pretraining_data import GenerationSettings, generate
  corpus = os.path.join(TESTDATA, "original_pretraining_data", "corpus.txt")
  settings = GenerationSettings(tokenizer=TokenizerSettings(spm_model_file=SPM), dupe_factor=1,
                                instance=InstanceOptions(max_seq_length=64,
                                                         max_predictions_per_seq=10))
  local = str(tmp_path / "local.tfrecord")
  generate([corpus], [local], settings)
  remote_corpus = _upload(corpus, f"{ram}/in/corpus.txt")
  inputs = io.expand_input_patterns(f"{ram}/in/*.txt")
  assert inputs == [remote_corpus]
  generate(inputs, [f"{ram}/out/corpus.tfrecord"], settings)
  assert tf.io.gfile.listdir(f"{ram}/out") == ["corpus.tfrecord"]  # no temporary left
  with tf.io.gfile.GFile(f"{ram}/out/corpus.tfrecord", "rb") as f:
    remote_bytes = f.read()
  with open(local, "rb") as f:
    assert remote_bytes == f.read()
