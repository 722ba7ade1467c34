"""WordPiece models end to end: run_classifier and export_saved_model take --vocab_file, and
their SavedModels serve raw text (English and Chinese) as the original's features give it, in a
process that never imports albert_tf."""

import json
import os

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_text  # noqa: F401 -- registers the text ops a SavedModel needs

import albert_tf
from albert_tf.export.serving_ops import ops_missing_from, saved_model_ops
from albert_tf.tasks.classifier.features import convert_single_example
from albert_tf.tasks.classifier.data import InputExample
from albert_tf.tokenization import FullTokenizer
from helpers import ORIGINAL_MODEL, TESTDATA, run_binary
import warm_binaries

pytestmark = pytest.mark.slow  # each binary builds, loads and exports a model (10-20 s)

WORDPIECE = os.path.join(TESTDATA, "original_wordpiece")
VOCAB = os.path.join(WORDPIECE, "vocab.txt")
ALLOWLIST = os.path.join(TESTDATA, "serving_ops_tf2.12.txt")
T = 48


def _texts(casing="lower"):
  with open(os.path.join(WORDPIECE, f"tokenization_{casing}.jsonl"), encoding="utf-8") as f:
    return [json.loads(line)["text"] for line in f]


@pytest.fixture(scope="module")
def wordpiece_classifier(tmp_path_factory):
  """A classifier over the fixture vocab.txt (random weights, seeded), saved as a checkpoint,
  and its config."""
  root = tmp_path_factory.mktemp("wordpiece")
  with open(os.path.join(ORIGINAL_MODEL, "albert_config.json")) as f:
    config = json.load(f)
  config["vocab_size"] = len(FullTokenizer(VOCAB, True).vocab)
  # Weights far larger than the usual 0.02, so that the untrained model's probabilities differ
  # clearly from one input to the next.
  config["initializer_range"] = 0.5
  config_file = root / "albert_config.json"
  config_file.write_text(json.dumps(config))
  tf.keras.utils.set_random_seed(3)
  model = albert_tf.AlbertClassifier(albert_tf.AlbertConfig.from_json_file(str(config_file)), 2)
  prefix = albert_tf.save_original_checkpoint(model, str(root / "ckpt" / "model.ckpt-0"))
  return str(config_file), prefix


_SERVE = r"""
import json, sys
import numpy as np
import tensorflow as tf
import tensorflow_text  # noqa: F401 -- registers the text ops a SavedModel needs
import tensorflow_text  # the ops, as TF Serving links them
model = tf.saved_model.load(sys.argv[1])
texts = json.load(open(sys.argv[2], encoding="utf-8"))
features = dict(np.load(sys.argv[3]))
out = model.signatures["serving_default"](text=tf.constant(texts["a"]),
                                          text_b=tf.constant(texts["b"]))
by_ids = model.signatures["tokens"](**{k: tf.constant(v) for k, v in features.items()})
info = model.signatures["tokenization_info"]()
assert "albert_tf" not in sys.modules
print(json.dumps({"probabilities": out["probabilities"].numpy().tolist(),
                  "tokens_probabilities": by_ids["probabilities"].numpy().tolist(),
                  "vocab_file": info["vocab_file"].numpy().decode(),
                  "do_lower_case": bool(info["do_lower_case"].numpy())}))
"""


def _serve_without_albert_tf(export_path, first, second, features, tmp_path):
  (tmp_path / "texts.json").write_text(json.dumps({"a": first, "b": second}), encoding="utf-8")
  np.savez(tmp_path / "features.npz", **features)
  result = warm_binaries.run_python(
      ["-c", _SERVE, export_path, str(tmp_path / "texts.json"), str(tmp_path / "features.npz")],
      "bare", cwd=tmp_path, timeout=300,
      env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
  assert result.returncode == 0, result.stderr[-3000:]
  return json.loads(result.stdout.strip().splitlines()[-1])


def test_classifier_exported_from_a_wordpiece_model_serves_raw_text(wordpiece_classifier,
                                                                    tmp_path):
  config_file, checkpoint = wordpiece_classifier
  export = tmp_path / "export"
  run_binary("run_classifier", [
      "--task_name=mrpc", f"--data_dir={tmp_path}", f"--output_dir={tmp_path / 'out'}",
      f"--albert_config_file={config_file}", f"--init_checkpoint={checkpoint}",
      f"--vocab_file={VOCAB}", "--do_lower_case", f"--max_seq_length={T}",
      f"--export_dir={export}"])
  [version] = os.listdir(export)
  path = str(export / version)
  # Pairs of fixture lines, English and Chinese (CJK ideographs, full-width punctuation).
  texts = _texts()
  first, second = texts[0:400:5], texts[1:400:5] + texts[-3:]
  second = second[:len(first)]
  full = FullTokenizer(VOCAB, True)
  rows = [convert_single_example(InputExample("x", a, b, "0"), ["0", "1"], T, full)
          for a, b in zip(first, second)]
  features = {name: np.array([getattr(r, name) for r in rows], np.int32)
              for name in ("input_ids", "input_mask", "segment_ids")}
  served = _serve_without_albert_tf(path, first, second, features, tmp_path)
  # Raw text tokenized in the graph gives what the original's features give.
  np.testing.assert_allclose(served["probabilities"], served["tokens_probabilities"], atol=1e-5)
  assert np.ptp(np.array(served["probabilities"])[:, 0]) > 0.05  # the inputs matter
  assert served["vocab_file"].endswith("vocab.txt") and served["do_lower_case"]
  assert "WordpieceTokenizeWithOffsets" in saved_model_ops(path)
  assert ops_missing_from(path, ALLOWLIST) == []


def test_export_saved_model_takes_a_vocab_file(wordpiece_classifier, tmp_path):
  config_file, _ = wordpiece_classifier
  config = albert_tf.AlbertConfig.from_json_file(config_file)
  pretrainer = albert_tf.AlbertPretrainer(config)
  prefix = albert_tf.save_original_checkpoint(pretrainer, str(tmp_path / "pre" / "model.ckpt-0"))
  run_binary("export_saved_model", [
      f"--albert_config_file={config_file}", f"--init_checkpoint={prefix}",
      f"--vocab_file={VOCAB}", "--nodo_lower_case", f"--max_seq_length={T}",
      f"--export_dir={tmp_path / 'export'}"])
  model = tf.saved_model.load(str(tmp_path / "export" / "1"))
  texts = _texts("cased")[:50]
  out = model.signatures["serving_default"](text=tf.constant(texts))
  full = FullTokenizer(VOCAB, False)
  for row, mask, text in zip(out["input_ids"].numpy(), out["input_mask"].numpy(), texts):
    ids = full.convert_tokens_to_ids(full.tokenize(text))[:T - 2]
    assert row[mask.astype(bool)].tolist() == [full.vocab["[CLS]"]] + ids + [full.vocab["[SEP]"]]
  assert ops_missing_from(str(tmp_path / "export" / "1"), ALLOWLIST) == []
  result = run_binary("export_saved_model", [
      f"--albert_config_file={config_file}", f"--init_checkpoint={prefix}",
      f"--export_dir={tmp_path / 'none'}"], check=False)
  assert result.returncode != 0 and "or --vocab_file for a WordPiece model" in result.stderr
