"""A checkpoint is opened once (checkpoints.open_checkpoint) and checked once: a run that starts
from another run's checkpoint gets the right answer or a one-line refusal, never a silent result.
Evaluation, prediction and export from a head the checkpoint lacks, or one trained for another
task; a tokenizer other than the one the checkpoint keeps; a checkpoint that cannot be read.
Jobs are built from settings alone, in-process."""

import os
import shutil

import pytest
import sentencepiece

from albert_tf.checkpoints import open_checkpoint, spm_model_file
from albert_tf.checkpoints.opened import ORIGINAL, OURS, UnreadableCheckpointError
from albert_tf.core import cli, errors, settings
from albert_tf.models import AlbertModel
from albert_tf.tasks.classifier import settings as classifier_settings
from albert_tf.tasks.classifier.job import ClassifierJob
from albert_tf.training import flags as common_flags
from helpers import ORIGINAL_MODEL, REPO_ROOT, TESTDATA

CONFIG = os.path.join(ORIGINAL_MODEL, "albert_config.json")
SPM = os.path.join(TESTDATA, "original_pretraining_data", "30k-clean-tiny.model")
GLUE_DATA = os.path.join(TESTDATA, "original_finetuning", "glue", "glue_data")
PRETRAINED = os.path.join(ORIGINAL_MODEL, "model.ckpt-0")


def _classifier(out, init, task_name="mrpc", train=False, spm=SPM, **fields):
  """A ClassifierJob evaluating on the bundled GLUE rows (2 AdamW steps first when `train`);
  the config is the one --init_checkpoint keeps, else the fixture's."""
  return ClassifierJob(classifier_settings.ClassifierSettings(
      output_dir=str(out), task_name=task_name, data_dir=GLUE_DATA, do_train=train,
      do_eval=True, eval_batch_size=4,
      model=settings.ModelSettings(
          albert_config_file=CONFIG if init == PRETRAINED else None, max_seq_length=48,
          init_checkpoint=str(init)),
      tokenizer=settings.TokenizerSettings(spm_model_file=spm),
      train=settings.TrainSettings(optimizer="adamw", train_batch_size=4, num_train_steps=2,
                                   num_warmup_steps=1, learning_rate=1e-3,
                                   save_checkpoints_steps=2), **fields))


@pytest.fixture(scope="module")
def mrpc_run(tmp_path_factory):
  """An MRPC output_dir fine-tuned 2 steps from the fixture model: model.ckpt-best, and its
  config, tokenizer and task kept beside it."""
  out = tmp_path_factory.mktemp("mrpc") / "out"
  _classifier(out, PRETRAINED, train=True).run()
  return str(out)


def test_open_answers_format_step_config_and_kept_files(mrpc_run):
  released = open_checkpoint(ORIGINAL_MODEL)
  assert released.kind == ORIGINAL and released.global_step == 4
  assert released.config()[1] == CONFIG
  assert released.kept_tokenizer == (None, None) and released.task is None
  opened = open_checkpoint(mrpc_run)
  # An output_dir opens as its model.ckpt-best, written in the released layout.
  assert opened.location == os.path.join(mrpc_run, "model.ckpt-best")
  assert opened.kind == ORIGINAL and opened.global_step == 2
  assert opened.kept_tokenizer == (os.path.join(mrpc_run, "spiece.model"), None)
  assert opened.task == {"model": "AlbertClassifier", "task": "mrpc"}
  assert opened.config()[1] == os.path.join(mrpc_run, "albert_config.json")
  assert open_checkpoint(os.path.join(mrpc_run, "model.ckpt-2")).kind == OURS
  assert open_checkpoint(None) is None
  # It stands for its path, and the path-taking functions ask it rather than open it again.
  assert os.fspath(opened) == str(opened) == mrpc_run and open_checkpoint(opened) is opened
  assert spm_model_file(None, None, opened) == os.path.join(mrpc_run, "spiece.model")


def test_evaluating_a_head_the_checkpoint_lacks_is_refused(tmp_path):
  out = tmp_path / "eval"
  with pytest.raises(errors.CheckpointError,
                     match=rf"--init_checkpoint={PRETRAINED} has no AlbertClassifier head \(it "
                           r"lacks output_bias, output_weights\).*--allow_random_heads"):
    _classifier(out, PRETRAINED).run()
  assert not (out / "eval_results.txt").exists()
  assert not (out / "model.ckpt-best.index").exists()
  # Asked for explicitly, the random head runs.
  _classifier(out, PRETRAINED, allow_random_heads=True).run()
  assert "eval_accuracy" in (out / "eval_results.txt").read_text()


@pytest.mark.slow  # two evaluations and a training run
def test_another_tasks_head_is_refused_without_training(mrpc_run, tmp_path):
  # An SST-2 evaluation of an MRPC classifier: the same [2, H] head, another task.
  with pytest.raises(errors.CheckpointError,
                     match=rf"--init_checkpoint={mrpc_run} holds a head fine-tuned as "
                           r"AlbertClassifier of task mrpc, and this run evaluates, predicts or "
                           r"exports AlbertClassifier of task sst-2"):
    _classifier(tmp_path / "sst2", mrpc_run, task_name="sst-2").run()
  assert not (tmp_path / "sst2" / "eval_results.txt").exists()
  # The same task's evaluation runs, from its model.ckpt-best (global step 2).
  _classifier(tmp_path / "mrpc_eval", mrpc_run).run()
  assert "global_step = 2" in (tmp_path / "mrpc_eval" / "eval_results.txt").read_text()
  # Training from another task's head is transfer (the paper starts RTE from MNLI).
  _classifier(tmp_path / "rte", mrpc_run, task_name="rte", train=True).run()
  assert (tmp_path / "rte" / "model.ckpt-best.index").exists()


def test_an_output_dir_of_another_task_is_refused(mrpc_run, tmp_path):
  out = tmp_path / "copy"
  shutil.copytree(mrpc_run, out)
  with pytest.raises(errors.ResumeMismatchError,
                     match=rf"--output_dir={out} holds a model fine-tuned as AlbertClassifier of "
                           r"task mrpc .*not AlbertClassifier of task sst-2: use a new "
                           r"--output_dir"):
    ClassifierJob(classifier_settings.ClassifierSettings(
        output_dir=str(out), task_name="sst-2", data_dir=GLUE_DATA, do_eval=True,
        eval_batch_size=4, model=settings.ModelSettings(max_seq_length=48,
                                                        albert_config_file=CONFIG),
        tokenizer=settings.TokenizerSettings(spm_model_file=SPM))).run()


def test_a_tokenizer_other_than_the_kept_one_is_refused(mrpc_run, tmp_path):
  # Another SentencePiece model that fits the config: a run would take it without a word.
  other = tmp_path / "other.model"
  sentencepiece.SentencePieceTrainer.train(
      input=os.path.join(REPO_ROOT, "data", "sample", "corpus.txt"), vocab_size=500,
      model_prefix=str(tmp_path / "other"), num_threads=1, minloglevel=2,
      control_symbols=["[CLS]", "[SEP]"], user_defined_symbols=["[MASK]"])
  kept = os.path.join(mrpc_run, "spiece.model")
  message = (rf"--spm_model_file={other} is another file, not the SentencePiece model {kept} "
             rf"that --init_checkpoint={mrpc_run} was trained with")
  with pytest.raises(errors.UsageError, match=message):
    _classifier(tmp_path / "out", mrpc_run, spm=str(other))
  # The exporters' resolution is the same one (export_saved_model would build it in).
  with pytest.raises(errors.UsageError, match=message):
    common_flags.export_tokenizer_files(str(other), None, mrpc_run)
  vocab = os.path.join(TESTDATA, "cmrc2018", "vocab.txt")
  with pytest.raises(errors.UsageError, match=r"--vocab_file=.* is a WordPiece vocabulary, not "
                                              r"the SentencePiece model"):
    spm_model_file(None, vocab, mrpc_run)
  # The same file under another name passes; none given takes the kept one.
  same = tmp_path / "same.model"
  shutil.copy(SPM, same)
  assert spm_model_file(str(same), None, mrpc_run) == str(same)
  assert spm_model_file(None, None, mrpc_run) == kept


def _truncated_copy(directory, suffix):
  """A copy of the fixture's model.ckpt-0 whose file ending in `suffix` lost its second half."""
  os.makedirs(directory)
  for name in os.listdir(ORIGINAL_MODEL):
    if name.startswith("model.ckpt-0.") or name == "albert_config.json":
      shutil.copy(os.path.join(ORIGINAL_MODEL, name), directory)
  [path] = [os.path.join(directory, n) for n in os.listdir(directory) if n.endswith(suffix)]
  with open(path, "r+b") as f:
    f.truncate(os.path.getsize(path) // 2)
  return os.path.join(directory, "model.ckpt-0")


def test_a_checkpoint_that_cannot_be_read_is_one_line_naming_it(tmp_path):
  import albert_tf
  config = albert_tf.AlbertConfig.from_json_file(CONFIG)
  data = _truncated_copy(str(tmp_path / "data"), ".data-00000-of-00001")
  with pytest.raises(UnreadableCheckpointError, match=rf"cannot read checkpoint {data} "):
    open_checkpoint(data).load_into(AlbertModel(config))
  index = _truncated_copy(str(tmp_path / "index"), ".index")
  opened = open_checkpoint(index)  # its files are read when first asked for
  with pytest.raises(UnreadableCheckpointError, match=rf"cannot read checkpoint {index} ") as e:
    opened.load_into(AlbertModel(config))
  assert cli.exit_code(e.value) == errors.FAILED_RUN_EXIT_CODE
  assert "\n" not in cli.message(e.value)
  # A job starting from the half-written checkpoint stops with it, before any result.
  with pytest.raises(UnreadableCheckpointError, match=rf"cannot read checkpoint {data} "):
    _classifier(tmp_path / "out", data, train=True).run()
  assert not (tmp_path / "out" / "eval_results.txt").exists()


def test_squad_predictions_from_a_pretraining_checkpoint_are_refused(tmp_path):
  from albert_tf.tasks.squad.job import SquadJob
  from albert_tf.tasks.squad.settings import SquadSettings
  out = tmp_path / "squad"
  with pytest.raises(errors.CheckpointError,
                     match=rf"--init_checkpoint={PRETRAINED} has no AlbertSpanLabeler head"):
    SquadJob(SquadSettings(
        output_dir=str(out), do_predict=True, doc_stride=24, max_query_length=16,
        predict_file=os.path.join(TESTDATA, "original_finetuning", "squad", "v1", "dev.json"),
        model=settings.ModelSettings(albert_config_file=CONFIG, max_seq_length=64,
                                     init_checkpoint=PRETRAINED),
        tokenizer=settings.TokenizerSettings(spm_model_file=SPM))).run()
  assert not (out / "predictions.json").exists()


def test_a_tagger_from_a_sentence_classifiers_head_is_refused(mrpc_run, tmp_path):
  from albert_tf.tasks.ner.job import NerJob
  from albert_tf.tasks.ner.settings import NerSettings
  # Two tags: the classifier's [2, H] head has the tagger's shape.
  data = tmp_path / "ner"
  data.mkdir()
  (data / "dev.txt").write_text("Obama B-X\nsaid O\n\nhello O\nworld B-X\n", encoding="utf-8")
  with pytest.raises(errors.CheckpointError,
                     match=rf"--init_checkpoint={mrpc_run} holds a head fine-tuned as "
                           r"AlbertClassifier of task mrpc, and this run evaluates, predicts or "
                           r"exports AlbertTokenClassifier"):
    NerJob(NerSettings(
        output_dir=str(tmp_path / "out"), data_dir=str(data), do_eval=True, label_list="O,B-X",
        model=settings.ModelSettings(max_seq_length=32, init_checkpoint=mrpc_run),
        tokenizer=settings.TokenizerSettings(spm_model_file=SPM))).run()
  assert not (tmp_path / "out" / "eval_results.txt").exists()
