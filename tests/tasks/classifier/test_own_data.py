"""run_classifier on your own CSV/TSV/JSONL data: a CSV, JSONL and headerless TSV copy of MRPC
(and a CSV copy of STS-B) give the original's features record for record; bad rows name file and
line; a multi-label JSONL run end to end (eval_results' micro/macro F1 against a plain-Python
reference on its predictions, the SavedModel's per-label outputs, the HF export read back through
our HF loader); a regression run; label lists against the checkpoint; the one-line usage error."""

import csv
import glob
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from albert_tf.core import errors, settings
from albert_tf.tasks.classifier import data as glue
from albert_tf.tasks.classifier import features as classifier_features
from albert_tf.tasks.classifier import own_data
from albert_tf.tasks.classifier.settings import OwnDataSettings
from albert_tf.tokenization import FullTokenizer
from helpers import ORIGINAL_MODEL, REPO_ROOT, TESTDATA
from tfrecord_utils import read_examples

GLUE = os.path.join(TESTDATA, "original_finetuning", "glue")
SPM = os.path.join(TESTDATA, "original_pretraining_data", "30k-clean-tiny.model")
CONFIG = os.path.join(ORIGINAL_MODEL, "albert_config.json")
OWN = os.path.join(TESTDATA, "own_data")
MRPC_COLUMNS = {"text_column": "#1 String", "text_b_column": "#2 String",
                "label_column": "Quality"}


@pytest.fixture(scope="module")
def tokenizer():
  return FullTokenizer(spm_model_file=SPM, do_lower_case=True)


def _glue_rows(task, split):
  return glue.read_tsv(os.path.join(GLUE, "glue_data", task, f"{split}.tsv"))


def _write_csv(path, rows):
  with open(path, "w", newline="", encoding="utf-8") as f:
    csv.writer(f).writerows(rows)
  return str(path)


def _write_jsonl(path, rows):
  header = rows[0]
  with open(path, "w", encoding="utf-8") as f:
    for row in rows[1:]:
      f.write(json.dumps(dict(zip(header, row))) + "\n")
  return str(path)


def _features(spec, split, tokenizer, out):
  processor = own_data.OwnDataProcessor(spec)
  names, _, _ = own_data.resolve_labels(processor, None, None, None, training=True)
  path = str(out / f"{split}.tf_record")
  classifier_features.file_based_convert_examples_to_features(
      processor.get_examples(None, split), names if names else [None], 48, tokenizer, path,
      spec.regression, processor.multi_label)
  return names, read_examples(path)


@pytest.mark.parametrize("kind", ["csv", "jsonl", "headerless_tsv"])
def test_a_copy_of_mrpc_gives_the_original_features(kind, tokenizer, tmp_path):
  files, columns = {}, dict(MRPC_COLUMNS)
  for split in ("train", "dev", "test"):
    rows = _glue_rows("MRPC", split)
    if kind == "csv":
      files[split] = _write_csv(tmp_path / f"{split}.csv", rows)
    elif kind == "jsonl":
      files[split] = _write_jsonl(tmp_path / f"{split}.jsonl", rows)
    else:  # no header line: the columns by their index
      if split == "test":  # its column 0 is an index, not a label: the unlabelled rows' label
        rows = [["0"] + r[1:] for r in rows]
      path = tmp_path / f"{split}.tsv"
      path.write_text("".join("\t".join(r) + "\n" for r in rows[1:]), encoding="utf-8")
      files[split] = str(path)
      columns = {"text_column": "3", "text_b_column": "4", "label_column": "0"}
  for split in ("train", "dev", "test"):
    spec = own_data.OwnDataSpec(files=files, **columns)
    names, got = _features(spec, split, tokenizer, tmp_path)
    assert names == ["0", "1"]
    assert got == read_examples(os.path.join(GLUE, "expected", f"mrpc_{split}.tfrecord")), split


def test_a_csv_copy_of_sts_b_gives_the_original_regression_features(tokenizer, tmp_path):
  files = {split: _write_csv(tmp_path / f"{split}.csv", _glue_rows("STS-B", split))
           for split in ("train", "dev")}
  spec = own_data.OwnDataSpec(files=files, text_column="sentence1", text_b_column="sentence2",
                              label_column="score", label_type="float")
  for split in ("train", "dev"):
    names, got = _features(spec, split, tokenizer, tmp_path)
    assert names == []
    assert got == read_examples(os.path.join(GLUE, "expected", f"sts-b_{split}.tfrecord"))


def test_multi_label_rows_become_multi_hot_labels(tokenizer, tmp_path):
  path = tmp_path / "t.csv"
  path.write_text("text,tags\nthe cat,b|a\na dog,\nsome text,c\n", encoding="utf-8")
  spec = own_data.OwnDataSpec(files={"train": str(path)}, label_column="tags",
                              label_separator="|")
  names, got = _features(spec, "train", tokenizer, tmp_path)
  assert names == ["a", "b", "c"]
  assert [r["label_ids"] for r in got] == [[1, 1, 0], [0, 0, 0], [0, 0, 1]]


@pytest.mark.parametrize("content, spec, message", [
    ("text,label\nfine,x\n,y\n", {}, "t.csv:3: column 'text' is empty"),
    ("text,label\nfine,x\nno label\n", {}, "t.csv:3: no column 'label'"),
    ("sentence,label\nfine,x\n", {}, "t.csv:2: no column 'text'"),
    ("text,label\nfine,1.5\nbad,high\n", {"label_type": "float"},
     "t.csv:3: label 'high' in column 'label' is not a number"),
    ('text,label\n"a quoted\nfield",x\nok,y\n', {"label_list": ("x",)},
     "t.csv:4: unknown label 'y'"),
    ('{"text": "a", "label": "x"}\n\n{"text": "b", "label": "x"\n', {},
     "t.jsonl:3: not a JSON object"),
    ('{"text": "a", "label": "x"}\n{"label": "x"}\n', {}, "t.jsonl:2: no column 'text'"),
])
def test_bad_rows_name_the_file_and_line(tmp_path, content, spec, message):
  name = "t.jsonl" if content.startswith("{") else "t.csv"
  (tmp_path / name).write_text(content, encoding="utf-8")
  processor = own_data.OwnDataProcessor(own_data.OwnDataSpec(
      files={"train": str(tmp_path / name)}, **spec))
  with pytest.raises(errors.DataFormatError) as raised:
    own_data.resolve_labels(processor, spec.get("label_list"), None, None, training=True)
  assert str(raised.value).startswith(str(tmp_path / message.split(":")[0])), raised.value
  assert message in str(raised.value)


def test_an_unknown_label_in_the_dev_file_is_refused(tmp_path):
  (tmp_path / "train.csv").write_text("text,label\na,x\nb,y\n", encoding="utf-8")
  (tmp_path / "dev.csv").write_text("text,label\na,x\nb,z\n", encoding="utf-8")
  processor = own_data.OwnDataProcessor(own_data.OwnDataSpec(
      files={"train": str(tmp_path / "train.csv"), "dev": str(tmp_path / "dev.csv")}))
  with pytest.raises(errors.DataFormatError, match=r"dev.csv:3: unknown label 'z'.*x, y"):
    own_data.resolve_labels(processor, None, None, None, training=True)


# ---- runs ------------------------------------------------------------------------------------
def _settings(out, **kwargs):
  train = kwargs.pop("train", {})
  kwargs = dict(dict(eval_batch_size=8, predict_batch_size=8), **kwargs)
  return OwnDataSettings(
      output_dir=str(out),
      model=settings.ModelSettings(albert_config_file=CONFIG, max_seq_length=48,
                                   init_checkpoint=kwargs.pop("init_checkpoint", None)),
      tokenizer=settings.TokenizerSettings(spm_model_file=SPM),
      train=settings.TrainSettings(**dict(dict(
          optimizer="adamw", train_batch_size=8, num_train_steps=2, num_warmup_steps=1,
          learning_rate=5e-3, save_checkpoints_steps=2), **train)),
      run=settings.RunSettings(random_seed=1, data_seed=1), **kwargs)


def _eval_results(path):
  [block] = [b for b in open(path).read().split("=" * 50) if b.strip()]
  pairs = (line.split(" = ") for line in block.strip().splitlines())
  return {k: v if k == "checkpoint" else float(v) for k, v in pairs}


def _labels_of(path, column):
  return [json.loads(line)[column] for line in open(path, encoding="utf-8") if line.strip()]


@pytest.fixture(scope="module")
def multi_label_run(tmp_path_factory):
  """The committed multi-label sample, trained 2 steps, evaluated, the dev file predicted (as
  the test file, to check the metrics against its predictions) and exported."""
  from albert_tf.tasks.classifier.own_job import OwnDataJob
  root = tmp_path_factory.mktemp("multi_label")
  dev = os.path.join(OWN, "dev.jsonl")
  OwnDataJob(_settings(root / "out", train_file=os.path.join(OWN, "train.jsonl"), dev_file=dev,
                       test_file=dev, label_column="labels", threshold=0.5, do_train=True,
                       do_eval=True, do_predict=True, export_dir=str(root / "export"))).run()
  return root


def _f1(tp, fp, fn):
  return 2 * tp / (2 * tp + fp + fn) if tp + fp + fn else 0.0


@pytest.mark.slow
def test_multi_label_run_reports_micro_and_macro_f1_of_its_predictions(multi_label_run):
  out = multi_label_run / "out"
  saved = json.loads((out / "classifier_labels.json").read_text())
  assert saved == {"labels": ["code", "long", "the"],
                   "problem_type": "multi_label_classification"}
  truth = _labels_of(os.path.join(OWN, "dev.jsonl"), "labels")
  submit = (out / "submit_results.tsv").read_text().splitlines()
  assert submit[0] == "index\tprediction" and len(submit) == len(truth) + 1
  predicted = [line.split("\t")[1].split(",") if line.split("\t")[1] else []
               for line in submit[1:]]
  probabilities = [[float(p) for p in line.split("\t")]
                   for line in (out / "test_results.tsv").read_text().splitlines()]
  assert [[n for n, p in zip(saved["labels"], ps) if p > 0.5] for ps in probabilities] == predicted
  counts = {name: [0, 0, 0] for name in saved["labels"]}  # tp, fp, fn
  for want, got in zip(truth, predicted):
    for name in saved["labels"]:
      counts[name][0] += name in want and name in got
      counts[name][1] += name not in want and name in got
      counts[name][2] += name in want and name not in got
  micro = _f1(*[sum(c[i] for c in counts.values()) for i in range(3)])
  macro = sum(_f1(*c) for c in counts.values()) / len(counts)
  result = _eval_results(out / "eval_results.txt")
  assert result["micro_f1"] == pytest.approx(micro, abs=1e-12)
  assert result["macro_f1"] == pytest.approx(macro, abs=1e-12)
  assert result["best"] == result["micro_f1"]  # the checkpoint-selection metric
  assert 0 < micro < 1 and macro != micro, (micro, macro)  # a mixed prediction, not all or none
  exact = sum(set(w) == set(g) for w, g in zip(truth, predicted)) / len(truth)
  assert result["eval_accuracy"] == pytest.approx(exact, abs=1e-12)


@pytest.mark.slow
def test_multi_label_exports_serve_and_convert_to_hugging_face(multi_label_run, tmp_path):
  import tensorflow as tf
  import tensorflow_text  # noqa: F401 -- registers the text ops a SavedModel needs
  import albert_tf
  from albert_tf.checkpoints import load_checkpoint
  from albert_tf.export.hf import export_hf_layout
  from albert_tf.tasks.classifier.multilabel import AlbertMultiLabelClassifier
  out = multi_label_run / "out"
  names = ["code", "long", "the"]
  texts = [json.loads(line)["text"] for line in open(os.path.join(OWN, "dev.jsonl"))][:4]
  # The SavedModel: per-label probabilities, the names over the threshold, the threshold.
  [version] = glob.glob(str(multi_label_run / "export" / "*"))
  served = tf.saved_model.load(version).signatures["serving_default"](text=tf.constant(texts))
  probabilities = served["probabilities"].numpy()
  assert probabilities.shape == (4, 3) and float(served["threshold"]) == 0.5
  np.testing.assert_array_equal(served["predictions"].numpy(), probabilities > 0.5)
  assert [s.decode() for s in served["label"].numpy()] == [
      ",".join(n for n, p in zip(names, ps) if p > 0.5) for ps in probabilities]
  lines = (out / "test_results.tsv").read_text().splitlines()[:4]
  np.testing.assert_allclose(probabilities, [[float(p) for p in l.split("\t")] for l in lines],
                             atol=1e-5)
  # Hugging Face: config.json says multi-label with the names; its weights give our logits.
  config = albert_tf.AlbertConfig.from_json_file(CONFIG)
  hf_dir = export_hf_layout(config, str(out / "model.ckpt-best"), str(tmp_path / "hf"))
  written = json.loads(open(os.path.join(hf_dir, "config.json")).read())
  assert written["architectures"] == ["AlbertForSequenceClassification"]
  assert written["problem_type"] == "multi_label_classification"
  assert written["id2label"] == {"0": "code", "1": "long", "2": "the"}
  assert written["label2id"] == {"code": 0, "long": 1, "the": 2}
  ours = AlbertMultiLabelClassifier(config, 3)
  load_checkpoint(ours, str(out / "model.ckpt-best"))
  back = AlbertMultiLabelClassifier(config, 3)
  report = load_checkpoint(back, hf_dir)
  assert not report.missing
  ids = np.array([[2, 15, 27, 31, 3], [2, 40, 3, 8, 3]], np.int32)
  inputs = {"input_ids": ids, "segment_ids": np.array([[0, 0, 0, 0, 0], [0, 0, 0, 1, 1]])}
  ours_logits = ours(inputs)["logits"].numpy()
  np.testing.assert_array_equal(back(inputs)["logits"].numpy(), ours_logits)
  np.testing.assert_allclose(tf.sigmoid(ours_logits).numpy()[0], tf.sigmoid(
      ours(dict(inputs, input_ids=ids[:1], segment_ids=inputs["segment_ids"][:1]))["logits"]
  ).numpy()[0], atol=1e-6)


@pytest.mark.slow
def test_a_label_list_against_the_run_is_refused(multi_label_run, tmp_path):
  from albert_tf.tasks.classifier.own_job import OwnDataJob
  dev = os.path.join(OWN, "dev.jsonl")
  checkpoint = str(multi_label_run / "out" / "model.ckpt-best")
  with pytest.raises(errors.CheckpointError, match="orders the labels the long code"):
    OwnDataJob(_settings(tmp_path / "p", dev_file=dev, label_column="labels", do_eval=True,
                         label_list="the,long,code", init_checkpoint=checkpoint))
  scores = tmp_path / "scores.csv"
  scores.write_text("text,label\nsome text,0.5\n", encoding="utf-8")
  with pytest.raises(errors.ResumeMismatchError, match="multi_label_classification model"):
    OwnDataJob(_settings(tmp_path / "p", dev_file=str(scores), do_eval=True,
                         label_type="float", init_checkpoint=checkpoint))
  assert not (tmp_path / "p").exists()


@pytest.mark.slow
def test_regression_run_gives_the_originals_outputs(tmp_path):
  """A CSV copy of the STS-B fixture, evaluated and predicted at the original's fine-tuned
  checkpoint: its Pearson and MSE are the original's (reference.npz), as the GLUE path's."""
  from albert_tf.tasks.classifier.own_job import OwnDataJob
  dev = _write_csv(tmp_path / "dev.csv", _glue_rows("STS-B", "dev"))
  out = tmp_path / "out"
  checkpoint = os.path.join(TESTDATA, "original_finetuning", "classifier", "sts-b")
  OwnDataJob(_settings(out, dev_file=dev, test_file=dev, text_column="sentence1",
                       text_b_column="sentence2", label_column="score", label_type="float",
                       do_eval=True, do_predict=True, eval_batch_size=5,
                       init_checkpoint=os.path.join(checkpoint, "model.ckpt-0"))).run()
  ref = np.load(os.path.join(checkpoint, "reference.npz"))
  result = _eval_results(out / "eval_results.txt")
  assert result["MSE"] == pytest.approx(ref["per_example_loss"].mean(), abs=1e-5)
  expected = np.corrcoef(ref["predictions"], ref["dev_label_ids"])[0, 1]
  # As test_run_classifier: the fixture's scores spread by ~1e-3, so Pearson moves ~1e-5.
  assert result["pearson"] == pytest.approx(expected, abs=1e-4)
  assert result["best"] == result["pearson"]
  predicted = [float(l.split("\t")[1]) for l in
               (out / "submit_results.tsv").read_text().splitlines()[1:]]
  np.testing.assert_allclose(predicted, ref["predictions"], atol=1e-5)
  assert json.loads((out / "classifier_labels.json").read_text()) == {
      "labels": [], "problem_type": "regression"}


def test_task_name_with_own_files_is_one_usage_error_line(tmp_path):
  result = subprocess.run(
      [sys.executable, "-m", "albert_tf.run_classifier", "--task_name=MRPC",
       f"--data_dir={GLUE}", f"--train_file={os.path.join(OWN, 'train.jsonl')}",
       f"--output_dir={tmp_path / 'out'}", "--do_train"],
      cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
  assert result.returncode == 2
  lines = [l for l in result.stderr.splitlines() if l.startswith("error:")]
  assert lines == ["error: --task_name=MRPC and --train_file: give a GLUE task (--task_name, "
                   "--data_dir) or your own files (--train_file, --dev_file, --test_file), not "
                   "both"], result.stderr[-2000:]
  assert "Traceback" not in result.stderr


def test_settings_need_the_files_of_the_splits_asked_for(tmp_path):
  with pytest.raises(errors.UsageError, match="--do_eval needs --dev_file"):
    _settings(tmp_path, train_file="t.csv", do_train=True, do_eval=True)
  with pytest.raises(errors.UsageError, match="by its extension .txt"):
    own_data.file_format("data.txt")


def test_classifier_hf_config_has_its_label_names_and_problem_type(tmp_path):
  import albert_tf
  from albert_tf.checkpoints import hf
  from albert_tf.tasks.classifier.multilabel import AlbertMultiLabelClassifier
  config = albert_tf.AlbertConfig.from_json_file(CONFIG)
  cases = [(albert_tf.AlbertClassifier(config, label_names=["neg", "pos"]),
            "single_label_classification", {"0": "neg", "1": "pos"}),
           (albert_tf.AlbertClassifier(config, 1), "regression", {"0": "LABEL_0"}),
           (AlbertMultiLabelClassifier(config, 2, label_names=["a", "b"]),
            "multi_label_classification", {"0": "a", "1": "b"})]
  for i, (model, problem_type, id2label) in enumerate(cases):
    written = json.loads(open(os.path.join(hf.save_hf_checkpoint(model, str(tmp_path / str(i))),
                                           "config.json")).read())
    assert written["architectures"] == ["AlbertForSequenceClassification"]
    assert (written["problem_type"], written["id2label"]) == (problem_type, id2label)
  # The heads' declaration gives the original names and output shapes, as before the seam.
  model = cases[2][0]
  assert sorted(n for n in model.original_variables() if not n.startswith("bert/")) == [
      "output_bias", "output_weights"]
  assert model.compute_output_shape({"input_ids": (3, 7)})["logits"] == (3, 2)
  assert sorted(model.checkpoint_parts()) == ["classifier", "encoder"]
  again = AlbertMultiLabelClassifier.from_config(model.get_config())
  assert again.label_names == ["a", "b"] and again.num_labels == 2


def test_the_single_label_csv_sample_reads(tmp_path, tokenizer):
  spec = own_data.OwnDataSpec(files={"train": os.path.join(OWN, "reviews.csv")},
                              text_column="sentence")
  names, got = _features(spec, "train", tokenizer, tmp_path)
  assert names == ["code", "prose"] and len(got) == 16
  quoted = [r for r in csv.DictReader(open(os.path.join(OWN, "reviews.csv"), encoding="utf-8"))]
  assert [r["label_ids"] for r in got] == [[names.index(r["label"])] for r in quoted]


@pytest.mark.slow
def test_portable_exports_serve_a_multi_label_checkpoints_sigmoids(multi_label_run):
  """export_tflite / export_onnx's serving function (--head=auto) on the multi-label run's
  checkpoint: each label's own probability, run_classifier's test_results.tsv, not a softmax."""
  import albert_tf
  from albert_tf.export.portable import load_exportable_model, serving_outputs
  from albert_tf.tasks.classifier.multilabel import AlbertMultiLabelClassifier
  config = albert_tf.AlbertConfig.from_json_file(CONFIG)
  model = load_exportable_model(config, str(multi_label_run / "out" / "model.ckpt-best"), "auto")
  assert isinstance(model, AlbertMultiLabelClassifier)
  ids = np.array([[2, 15, 27, 31, 3], [2, 40, 3, 8, 3]], np.int32)
  features = {"input_ids": ids, "input_mask": np.ones_like(ids), "segment_ids": np.zeros_like(ids)}
  served = serving_outputs(model, features)["probabilities"].numpy()
  logits = model(features)["logits"].numpy()
  np.testing.assert_allclose(served, 1 / (1 + np.exp(-logits)), atol=1e-6)
  assert not np.allclose(served.sum(axis=-1), 1.0, atol=1e-3)
