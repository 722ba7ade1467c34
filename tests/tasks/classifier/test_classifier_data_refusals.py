"""run_classifier's data that trained or read silently wrong, now refused in one line naming the
file (and line) or the flag, with the fix: a training set of one class (a single-label run's one
softmax output trained to loss 0 and accuracy 1; a regression of one score; multi-label rows all
with the same labels; a GLUE task's training file of one label), --label_list with
--label_type=float (it was ignored), and scores that float() reads but a data file does not
write ('1_000' read as 1000, non-ASCII digits, '1e500' as inf, a JSON integer past a float's
range). Library calls, no TensorFlow, but for the job and the binary."""

import json
import os

import pytest

from albert_tf.core import errors, settings
from albert_tf.tasks.classifier import data as glue
from albert_tf.tasks.classifier import own_data
from albert_tf.tasks.classifier.settings import OwnDataSettings
from helpers import ORIGINAL_MODEL, TESTDATA, run_binary

SPM = os.path.join(TESTDATA, "original_pretraining_data", "30k-clean-tiny.model")
CONFIG = os.path.join(ORIGINAL_MODEL, "albert_config.json")


def _write(tmp_path, name, content):
  path = tmp_path / name
  path.write_text(content, encoding="utf-8", newline="")
  return str(path)


def _jsonl(tmp_path, name, *rows):
  return _write(tmp_path, name, "".join(json.dumps(row) + "\n" for row in rows))


def _resolve(files, training=True, **spec):
  """(processor, label names) of own-data `files` ({split: path}) as OwnDataJob resolves and
  checks them."""
  processor = own_data.OwnDataProcessor(own_data.OwnDataSpec(files=files, **spec))
  names, _, source = own_data.resolve_labels(processor, spec.get("label_list"), None, None,
                                             training)
  own_data.check_classes(processor, names, source, training)
  return processor, names


def _refused(error, files, training=True, **spec):
  with pytest.raises(error) as raised:
    _resolve(files, training, **spec)
  assert type(raised.value) is error, repr(raised.value)
  return str(raised.value)


# ---- a training set of one class -------------------------------------------------------------
@pytest.mark.parametrize("name, content, label", [
    ("t.csv", "text,label\ngood,pos\nfine,pos\nnice,pos\n", "'pos'"),
    ("t.tsv", "text\tlabel\ngood\t1\nfine\t1\n", "'1'"),
    ("t.jsonl", '{"text": "good", "label": 1}\n{"text": "fine", "label": "1"}\n', "'1'"),
])
def test_a_single_label_training_set_of_one_class_is_refused(tmp_path, name, content, label):
  # Before: the labels ['pos'], one softmax output: loss 0.0000 and accuracy 1.0 from step 1.
  path = _write(tmp_path, name, content)
  message = _refused(errors.DataFormatError, {"train": path})
  assert message.startswith(f"{path}: every training example has the label {label}: "), message
  assert message.endswith("give training data with at least two classes"), message


def test_one_class_against_a_longer_label_list_is_refused_and_two_classes_train(tmp_path):
  train = _write(tmp_path, "train.csv", "text,label\ngood,pos\nfine,pos\n")
  message = _refused(errors.DataFormatError, {"train": train}, label_list=("neg", "pos"))
  assert message.startswith(f"{train}: every training example has the label 'pos'"), message
  # Two classes train; a dev or test file of one class is no training set and reads.
  train = _write(tmp_path, "two.csv", "text,label\ngood,pos\nbad,neg\n")
  dev = _write(tmp_path, "dev.csv", "text,label\ngreat,pos\n")
  _, names = _resolve({"train": train, "dev": dev})
  assert names == ["neg", "pos"]
  _, names = _resolve({"dev": dev}, training=False, label_list=("neg", "pos"))
  assert names == ["neg", "pos"]


def test_a_label_list_of_one_name_is_a_usage_error_unless_multi_label(tmp_path):
  test = _write(tmp_path, "test.csv", "text\ngood\n")
  message = _refused(errors.UsageError, {"test": test}, training=False, label_list=("pos",))
  assert message.startswith("--label_list=pos names one label: "), message
  assert "give at least two classes" in message, message
  # Multi-label, one name is a yes/no label: rows with it and rows without train.
  train = _write(tmp_path, "tags.csv", "text,tags\ngood,pos\nbad,\n")
  processor, names = _resolve({"train": train}, label_column="tags", label_separator="|",
                              label_list=("pos",))
  assert names == ["pos"] and processor.multi_label


@pytest.mark.parametrize("rows, labels", [
    ([["a", "b"], ["b", "a"], ["a", "b"]], "('a', 'b')"),
    ([[], []], "(none)"),
    ([["a"], ["a"]], "('a')"),
])
def test_multi_label_rows_that_all_have_the_same_labels_are_refused(tmp_path, rows, labels):
  path = _jsonl(tmp_path, "t.jsonl", *({"text": f"text {i}", "label": row}
                                       for i, row in enumerate(rows)))
  message = _refused(errors.DataFormatError, {"train": path})
  assert message.startswith(f"{path}: every training example has the same labels {labels}"), (
      message)
  assert "at least two different sets of labels" in message, message


def test_a_regression_training_set_of_one_score_is_refused(tmp_path):
  path = _write(tmp_path, "scores.csv", "text,score\ngood,2.5\nfine,2.50\nnice,2.5\n")
  message = _refused(errors.DataFormatError, {"train": path}, label_column="score",
                     label_type="float")
  assert message.startswith(f"{path}: every training example has the score 2.5: "), message
  assert message.endswith("give training data whose scores vary"), message
  path = _write(tmp_path, "vary.csv", "text,score\ngood,2.5\nfine,0.5\n")
  _resolve({"train": path}, label_column="score", label_type="float")


@pytest.mark.parametrize("task, rows, label", [
    ("sst-2", "sentence\tlabel\ngood\t1\nfine\t1\n", "'1'"),
    ("sts-b", "".join(f"{i}\tg\tx\ty\tz\tw\tv\ta {i}\tb {i}\t3.0\n" for i in range(3)), "3.0"),
])
def test_a_glue_training_file_of_one_class_is_refused(tmp_path, task, rows, label):
  processor = glue.processor(task)
  folder = tmp_path / processor.spec.directory
  folder.mkdir()
  header = "\t".join(["h"] * 10) + "\n" if task == "sts-b" else ""
  path = folder / "train.tsv"
  path.write_text(header + rows, encoding="utf-8")
  with pytest.raises(errors.DataFormatError) as raised:
    processor.get_train_examples(str(tmp_path))
  message = str(raised.value)
  assert message.startswith(f"{path}: every training example has the "), message
  assert f" {label}: " in message, message
  # The same rows as a dev set read: only what is trained on is refused.
  (folder / "dev.tsv").write_text(header + rows, encoding="utf-8")
  assert len(processor.get_dev_examples(str(tmp_path))) == 2 + (task == "sts-b")


def _settings(out, **kwargs):
  return OwnDataSettings(
      output_dir=str(out),
      model=settings.ModelSettings(albert_config_file=CONFIG, max_seq_length=32),
      tokenizer=settings.TokenizerSettings(spm_model_file=SPM),
      train=settings.TrainSettings(optimizer="adamw", train_batch_size=2, num_train_steps=1,
                                   num_warmup_steps=0, save_checkpoints_steps=1), **kwargs)


def test_the_job_refuses_one_class_before_any_output(tmp_path):
  from albert_tf.tasks.classifier.own_job import OwnDataJob
  train = _write(tmp_path, "train.csv", "text,label\ngood,pos\nfine,pos\n")
  with pytest.raises(errors.DataFormatError, match=f"^{train}: every training example has the "
                     "label 'pos'"):
    OwnDataJob(_settings(tmp_path / "out", train_file=train, do_train=True))
  assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_the_binary_refuses_one_class_in_one_line(tmp_path):
  train = _write(tmp_path, "train.csv", "text,label\ngood,pos\nfine,pos\n")
  result = run_binary("run_classifier", [
      f"--train_file={train}", f"--output_dir={tmp_path / 'out'}", "--do_train",
      f"--albert_config_file={CONFIG}", f"--spm_model_file={SPM}", "--train_step=1",
      "--max_seq_length=32"], check=False, timeout=300)
  assert result.returncode == errors.FAILED_RUN_EXIT_CODE, result.stderr[-2000:]
  lines = [line for line in result.stderr.splitlines() if line.startswith("error:")]
  assert lines == [f"error: {train}: every training example has the label 'pos': a classifier "
                   "trained on one class only learns to answer it (loss 0, accuracy 1); give "
                   "training data with at least two classes"], result.stderr[-2000:]
  assert "Traceback" not in result.stderr
  assert not (tmp_path / "out").exists()


# ---- --label_list with --label_type=float ----------------------------------------------------
def test_a_label_list_with_label_type_float_is_a_usage_error(tmp_path):
  # Before: the regression ran and the list was ignored.
  with pytest.raises(errors.UsageError) as raised:
    OwnDataSettings(output_dir="out", model=settings.ModelSettings(), train_file="t.csv",
                    do_train=True, label_type="float", label_list="low,high")
  assert str(raised.value).startswith("--label_list=low,high with --label_type=float: "), (
      raised.value)
  assert "drop --label_list (regression) or --label_type=float (classes)" in str(raised.value)
  # The library refuses it too (OwnDataSpec, as a caller of own_data builds it).
  path = _write(tmp_path, "scores.csv", "text,label\ngood,2.5\nbad,0.5\n")
  message = _refused(errors.UsageError, {"train": path}, label_type="float",
                     label_list=("low", "high"))
  assert message.startswith("--label_list=low,high with --label_type=float: "), message


# ---- scores as plain decimal numbers ---------------------------------------------------------
@pytest.mark.parametrize("score, problem", [
    ("1_000", "not a plain decimal number"),
    ("1_0.5", "not a plain decimal number"),
    ("\u0661\u0662", "not a plain decimal number"),  # Arabic-Indic digits: float() reads 12
    ("1e500", "not a finite number"),
    ("-1E999", "not a finite number"),
])
def test_a_score_not_written_as_a_plain_decimal_number_is_refused(tmp_path, score, problem):
  # Plain spellings read as before.
  good = _write(tmp_path, "good.csv", "text,label\na, 2.5 \nb,-.5\nc,1E3\nd,+3.\ne,1e-500\n")
  processor, _ = _resolve({"train": good}, label_type="float")
  assert [e.label for _, e in processor.read_split("train")] == [2.5, -0.5, 1000.0, 3.0, 0.0]
  # Before: '1_000' trained as 1000.0, '1e500' was refused only as not finite.
  path = _write(tmp_path, "t.csv", f"text,label\nfine,0.5\nbad,{score}\n")
  message = _refused(errors.DataFormatError, {"train": path}, label_type="float")
  assert message.startswith(f"{path}:3: label {score!r} in column 'label' is {problem} "
                            "(--label_type=float): write each score as a plain decimal "
                            "number"), message


@pytest.mark.parametrize("line, message", [
    ('{"text": "b", "label": "1_000"}', "t.jsonl:2: label '1_000' in column 'label' is not a "
     "plain decimal number"),
    ('{"text": "b", "label": 1' + "0" * 400 + "}", "in column 'label' is not a finite number"),
])
def test_json_scores_past_a_float_or_as_python_literals_are_refused(tmp_path, line, message):
  # Before: a 401-digit integer raised OverflowError with a traceback.
  path = _write(tmp_path, "t.jsonl", '{"text": "a", "label": 0.5}\n' + line + "\n")
  assert message in _refused(errors.DataFormatError, {"train": path}, label_type="float")


def test_json_numbers_too_large_for_a_label_or_for_python_are_refused(tmp_path):
  # Before: JSON 1e500 became the class 'inf'; 5000 digits raised json's ValueError.
  path = _write(tmp_path, "t.jsonl", '{"text": "a", "label": 1}\n{"text": "b", "label": 1e500}\n')
  message = _refused(errors.DataFormatError, {"train": path})
  assert message.startswith(f"{path}:2: label inf in column 'label' is a JSON number past a "
                            "float's range: write the label as a JSON string"), message
  path = _write(tmp_path, "long.jsonl", '{"text": "a", "label": 1' + "0" * 5000 + "}\n")
  message = _refused(errors.DataFormatError, {"train": path}, label_type="float")
  assert message.startswith(f"{path}:1: a JSON number too long to read: "), message


def test_an_sts_b_score_not_written_as_a_plain_decimal_number_is_refused(tmp_path):
  processor = glue.processor("sts-b")
  folder = tmp_path / "STS-B"
  folder.mkdir()
  rows = ["\t".join(["h"] * 10)] + [f"{i}\tg\tx\ty\tz\tw\tv\ta {i}\tb {i}\t{score}"
                                    for i, score in enumerate(["3.8", "1_000"])]
  (folder / "dev.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")
  with pytest.raises(errors.DataFormatError) as raised:
    processor.get_dev_examples(str(tmp_path))
  assert str(raised.value).startswith(
      f"{folder / 'dev.tsv'}: row 2 (line 3): score '1_000' is not a plain decimal number: "
      "write each score as a plain decimal number"), raised.value
