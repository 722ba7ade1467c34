"""TFLite and ONNX exports (export.tflite, export.onnx): run in LiteRT and ONNX Runtime in a process
without TensorFlow, they give the Keras model's outputs (float within 1e-4; int8 close, same
predicted classes), each shared weight is stored once (file size against 4 bytes x parameters),
and the binary exports any checkpoint layout with its head.

Conversions take seconds each: the exports are made once per module (one TensorFlow start-up)
and run in one runtime process."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import albert_tf
from albert_tf.checkpoints import hf
from albert_tf.export import onnx as onnx_export
from albert_tf.export import portable, tflite
from albert_tf.export.portable_runtime import worst_cosine
from helpers import ORIGINAL_MODEL, REPO_ROOT, TESTDATA, run_binary

pytestmark = pytest.mark.slow

MRPC = os.path.join(TESTDATA, "original_finetuning", "classifier", "mrpc")
HF_QA = os.path.join(TESTDATA, "hf_albert", "qa")
# Big enough that the graph's own bytes (ops, names) are small beside the weights, so that the
# sizes say whether the 6 layers' shared block is stored once or six times.
SIZE_CONFIG = albert_tf.AlbertConfig(vocab_size=1000, embedding_size=32, hidden_size=256,
                                     num_hidden_layers=6, num_attention_heads=4,
                                     intermediate_size=1024, max_position_embeddings=64)

# Runs every file on the features in LiteRT / ONNX Runtime; TensorFlow must stay out.
RUN = """
import json, sys
import numpy as np
from albert_tf.export.portable_runtime import runner_for
features = dict(np.load(sys.argv[1]))
outputs = {}
for path in json.loads(sys.argv[2]):
  for name, value in runner_for(path)(features).items():
    outputs[os.path.basename(path) + ":" + name] = value
assert "tensorflow" not in sys.modules, "the runtimes must run without TensorFlow"
np.savez(sys.argv[3], **outputs)
""".replace("import json, sys", "import json, os, sys")


def _run_in_runtimes(paths, features, tmp):
  np.savez(tmp / "features.npz", **features)
  result = subprocess.run(
      [sys.executable, "-c", RUN, str(tmp / "features.npz"), json.dumps([str(p) for p in paths]),
       str(tmp / "outputs.npz")], cwd=REPO_ROOT, capture_output=True, text=True, timeout=300)
  assert result.returncode == 0, result.stderr[-3000:]
  with np.load(tmp / "outputs.npz") as outputs:
    return {key: outputs[key] for key in outputs}


def _exports(model, tmp, stem, max_seq_length):
  """The four exports of `model` under tmp: {file name: path}."""
  paths = {}
  for quantize in ("none", "dynamic_range"):
    paths[f"{stem}_{quantize}.tflite"] = tmp / f"{stem}_{quantize}.tflite"
    tflite.export_tflite(model, paths[f"{stem}_{quantize}.tflite"], max_seq_length, quantize)
    paths[f"{stem}_{quantize}.onnx"] = tmp / f"{stem}_{quantize}.onnx"
    onnx_export.export_onnx(model, paths[f"{stem}_{quantize}.onnx"], max_seq_length, quantize)
  return paths


@pytest.fixture(scope="module")
def classifier(tmp_path_factory):
  """The fixture MRPC classifier (the original's layout), its exports, the Keras outputs and the
  runtimes' outputs on its dev features."""
  tmp = tmp_path_factory.mktemp("portable")
  config = albert_tf.AlbertConfig.from_json_file(os.path.join(ORIGINAL_MODEL,
                                                              "albert_config.json"))
  # The fixture directory keeps none of run_classifier's files, which tell its [2, H] head from a
  # tagger's: --head says it.
  model = portable.load_exportable_model(config, os.path.join(MRPC, "model.ckpt-4"),
                                         head="classifier")
  assert isinstance(model, albert_tf.AlbertClassifier)
  with np.load(os.path.join(MRPC, "reference.npz")) as ref:
    features = {name: ref[f"dev_{name}"].astype(np.int32) for name in portable.INPUT_NAMES}
  # A shorter request than the export's max_seq_length, with padding: both axes are dynamic.
  features = {name: value[:, :40] for name, value in features.items()}
  keras = {k: np.asarray(v) for k, v in portable.serving_outputs(model, features).items()}
  paths = _exports(model, tmp, "mrpc", 48)
  return {"features": features, "keras": keras, "paths": paths,
          "outputs": _run_in_runtimes(paths.values(), features, tmp)}


def _outputs(classifier, file_name):
  prefix = file_name + ":"
  return {k[len(prefix):]: v for k, v in classifier["outputs"].items() if k.startswith(prefix)}


@pytest.mark.parametrize("file_name", ["mrpc_none.tflite", "mrpc_none.onnx"])
def test_float_exports_equal_the_keras_model(classifier, file_name):
  outputs = _outputs(classifier, file_name)
  assert sorted(outputs) == ["pooled_output", "probabilities", "sequence_output"]
  for name, expected in classifier["keras"].items():
    np.testing.assert_allclose(outputs[name], expected, atol=1e-4, err_msg=name)


@pytest.mark.parametrize("file_name", ["mrpc_dynamic_range.tflite", "mrpc_dynamic_range.onnx"])
def test_int8_exports_agree_with_float(classifier, file_name):
  outputs = _outputs(classifier, file_name)
  keras, mask = classifier["keras"], classifier["features"]["input_mask"]
  # The int8 fidelity goal. ONNX int8 has 7-bit weights (reduce_range): with 8-bit ones MLAS's AVX2
  # kernel saturated (0.973 here on an AVX2 EPYC; 0.9998 now, the same on every x86 CPU).
  assert worst_cosine(outputs["sequence_output"], keras["sequence_output"], mask) >= 0.999
  np.testing.assert_array_equal(outputs["probabilities"].argmax(-1),
                                keras["probabilities"].argmax(-1))


def test_exports_have_the_serving_signature(classifier):
  from ai_edge_litert.interpreter import Interpreter
  import onnx
  lite = Interpreter(model_path=str(classifier["paths"]["mrpc_none.tflite"]))
  signature = lite.get_signature_list()["serving_default"]
  assert sorted(signature["inputs"]) == sorted(portable.INPUT_NAMES)
  ops = {op["op_name"] for op in lite._get_ops_details()}
  assert not {op for op in ops if op.startswith("FLEX") or op == "CUSTOM"}, ops
  graph = onnx.load(str(classifier["paths"]["mrpc_none.onnx"])).graph
  assert [i.name for i in graph.input] == list(portable.INPUT_NAMES)
  for value in graph.input:
    assert [d.dim_param for d in value.type.tensor_type.shape.dim] == ["batch", "length"]


@pytest.mark.parametrize("file_name", ["mrpc_none.onnx", "mrpc_dynamic_range.onnx"])
def test_onnx_layer_norms_are_one_node_each(classifier, file_name):
  """export.onnx_layer_norm finds every LayerNorm in tf2onnx's real graph: the embeddings' and
  two per layer (3 layers), none left as ten nodes; the outputs are asserted above."""
  import onnx
  ops = [node.op_type for node in onnx.load(str(classifier["paths"][file_name])).graph.node]
  assert ops.count("LayerNormalization") == 1 + 2 * 3
  assert "GlobalAveragePool" not in ops and "Reciprocal" not in ops


@pytest.fixture(scope="module")
def sizes(tmp_path_factory):
  tmp = tmp_path_factory.mktemp("sizes")
  model = albert_tf.AlbertModel(SIZE_CONFIG)
  paths = _exports(model, tmp, "size", 64)
  features = portable.sample_features(SIZE_CONFIG, 3, 32)
  keras = {k: np.asarray(v) for k, v in portable.serving_outputs(model, features).items()}
  return {"bytes": {name: os.path.getsize(path) for name, path in paths.items()},
          "float_weights": 4 * portable.parameter_count(model), "keras": keras,
          "features": features, "outputs": _run_in_runtimes(paths.values(), features, tmp)}


@pytest.mark.parametrize("fmt", ["tflite", "onnx"])
def test_shared_weights_are_stored_once(sizes, fmt):
  float_bytes = sizes["bytes"][f"size_none.{fmt}"]
  int8_bytes = sizes["bytes"][f"size_dynamic_range.{fmt}"]
  # Six copies of the shared block would be 4x the weights.
  assert float_bytes <= 1.15 * sizes["float_weights"], sizes["bytes"]
  assert int8_bytes <= 0.35 * float_bytes, sizes["bytes"]


@pytest.mark.parametrize("fmt", ["tflite", "onnx"])
def test_int8_on_random_weights(sizes, fmt):
  outputs = {name: sizes["outputs"][f"size_{q}.{fmt}:sequence_output"]
             for name, q in (("float", "none"), ("int8", "dynamic_range"))}
  np.testing.assert_allclose(outputs["float"], sizes["keras"]["sequence_output"], atol=1e-4)
  assert worst_cosine(outputs["int8"], outputs["float"], sizes["features"]["input_mask"]) >= 0.999


def test_binary_exports_a_hugging_face_span_labeler(tmp_path):
  """--init_checkpoint in HF's layout, no --albert_config_file (its config.json is read): the
  SQuAD head's start/end logits come out, equal to the Keras model's."""
  output = tmp_path / "qa.tflite"
  run_binary("export_tflite", [f"--init_checkpoint={HF_QA}", f"--output_file={output}",
                               "--max_seq_length=16", "--quantize=float16"])
  config, _ = hf.model_config(None, HF_QA)
  model = portable.load_exportable_model(config, HF_QA)
  assert isinstance(model, albert_tf.AlbertSpanLabeler)
  features = portable.sample_features(config, 2, 12)
  outputs = _run_in_runtimes([output], features, tmp_path)
  for name in ("start_logits", "end_logits", "sequence_output"):
    # float16 weights: float accuracy to about 1e-3.
    np.testing.assert_allclose(outputs[f"qa.tflite:{name}"],
                               portable.serving_outputs(model, features)[name], atol=2e-2)


def test_binary_refuses_a_too_long_max_seq_length(tmp_path):
  result = run_binary("export_onnx", [
      f"--albert_config_file={os.path.join(ORIGINAL_MODEL, 'albert_config.json')}",
      f"--output_file={tmp_path / 'x.onnx'}", "--max_seq_length=65", "--random_weights"],
      check=False)
  assert result.returncode != 0
  assert ("--max_seq_length=65: cannot use sequence length 65 because the ALBERT model was only "
          "trained up to sequence length 64 (max_position_embeddings in "
          f"{os.path.join(ORIGINAL_MODEL, 'albert_config.json')}); give --max_seq_length=64 or "
          "less") in result.stderr
  assert not os.listdir(tmp_path)


@pytest.mark.parametrize("sharing", ["shared-attention", "shared-FFN", "not-shared"])
def test_every_sharing_variant_exports(sharing, tmp_path):
  """The paper's variants (config parameter_sharing) export to both formats with the Keras
  model's outputs; each layer's own weights are in the file once, the shared ones once."""
  config = albert_tf.AlbertConfig(vocab_size=500, embedding_size=16, hidden_size=64,
                                  num_hidden_layers=3, num_attention_heads=4,
                                  intermediate_size=128, max_position_embeddings=32,
                                  parameter_sharing=sharing)
  model = albert_tf.AlbertModel(config)
  features = portable.sample_features(config, 2, 16)
  keras = portable.serving_outputs(model, features)
  paths = [tmp_path / "v.tflite", tmp_path / "v.onnx"]
  tflite.export_tflite(model, paths[0], 32, "none")
  onnx_export.export_onnx(model, paths[1], 32, "none")
  outputs = _run_in_runtimes(paths, features, tmp_path)
  for path in paths:
    for name in ("sequence_output", "pooled_output"):
      np.testing.assert_allclose(outputs[f"{path.name}:{name}"], keras[name], atol=1e-4)
    # The weights once, plus the graph (small, a few hundred KB at most here).
    print("SIZE", sharing, path.name, os.path.getsize(path), 4 * portable.parameter_count(model))
    assert os.path.getsize(path) <= 4 * portable.parameter_count(model) + 400_000, path
