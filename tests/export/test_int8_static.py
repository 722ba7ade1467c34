"""Static int8 ONNX exports (export_onnx --quantize=static, export.calibration): calibrated on the
task's features, they give the float model's outputs as closely as the dynamic export does
(cosine on real tokens, the same predicted classes), their ops are the asked format's (QDQ pairs
on the weight MatMuls' inputs, their outputs float, or QLinearMatMul; u8 activations, s8
per-channel weights, no request-time quantization), and a calibration file that cannot work is
refused in one line naming the flag, the file and the record; the binary prints none of ONNX
Runtime's quantizer notices."""

import logging
import os

import numpy as np
import pytest

import albert_tf
from albert_tf.core import errors
from albert_tf.data.tfrecords import AtomicTFRecordWriter, encode_example, int64_feature
from albert_tf.export import onnx as onnx_export
from albert_tf.export import portable
from albert_tf.export.calibration import read_calibration_examples
from albert_tf.export.portable_runtime import worst_cosine
from helpers import ORIGINAL_MODEL, TESTDATA, run_binary
from test_portable_exports import _run_in_runtimes

MRPC = os.path.join(TESTDATA, "original_finetuning", "classifier", "mrpc")
MAX_SEQ_LENGTH = 48  # the fixture's features' length
CONFIG = albert_tf.AlbertConfig.from_json_file(os.path.join(ORIGINAL_MODEL, "albert_config.json"))
# What ONNX Runtime's quantizer logs on a run that goes well (export.onnx.quiet_quantizer).
QUANTIZER_NOTICES = ("pre-processing before quantization", "Quantization parameters for tensor",
                     "Ignore MatMul")


def _write_features(path, features, names=("input_ids", "input_mask", "segment_ids")):
  """A TFRecord of `features`' rows, as run_classifier caches them (int64 features)."""
  with AtomicTFRecordWriter(str(path)) as writer:
    for row in range(len(features["input_ids"])):
      writer.write(encode_example({name: int64_feature([int(v) for v in features[name][row]])
                                   for name in names}))
  return path


def _dev_features():
  with np.load(os.path.join(MRPC, "reference.npz")) as ref:
    return {name: ref[f"dev_{name}"].astype(np.int32) for name in portable.INPUT_NAMES}


def test_calibration_examples_are_cut_to_their_real_tokens(tmp_path):
  features = _dev_features()
  path = _write_features(tmp_path / "dev.tf_record", features)
  examples = read_calibration_examples(str(path), CONFIG, MAX_SEQ_LENGTH, limit=11)
  assert len(examples) == 11
  real_lengths = [int(mask.sum()) for mask in features["input_mask"][:11]]
  assert real_lengths[2] == 27 and real_lengths[7] == 37  # rows with padding
  for row, (example, real) in enumerate(zip(examples, real_lengths)):
    for name in portable.INPUT_NAMES:
      np.testing.assert_array_equal(example[name], features[name][row:row + 1, :real])
      assert example[name].dtype == np.int32


def _refusal(tmp_path, path, max_seq_length=MAX_SEQ_LENGTH):
  with pytest.raises(errors.AlbertError) as raised:
    read_calibration_examples(str(path), CONFIG, max_seq_length)
  message = str(raised.value)
  assert "\n" not in message and f"--calibration_data={path}" in message, message
  return message


def test_a_missing_calibration_file_is_refused(tmp_path):
  message = _refusal(tmp_path, tmp_path / "nowhere.tf_record")
  assert "no such file" in message and "input_ids/input_mask/segment_ids" in message


def test_an_empty_calibration_file_is_refused(tmp_path):
  path = tmp_path / "empty.tf_record"
  path.write_bytes(b"")
  assert "holds no records" in _refusal(tmp_path, path)


def test_features_longer_than_the_export_are_refused(tmp_path):
  path = _write_features(tmp_path / "long.tf_record", _dev_features())
  message = _refusal(tmp_path, path, max_seq_length=32)
  assert "input_ids=48" in message and "--max_seq_length is 32" in message, message


def test_a_file_without_the_features_is_refused(tmp_path):
  path = _write_features(tmp_path / "ids.tf_record", _dev_features(), names=("input_ids",))
  message = _refusal(tmp_path, path)
  assert "no int64 feature `input_mask`" in message, message


def test_a_calibration_directory_is_refused(tmp_path):
  message = _refusal(tmp_path, tmp_path)
  assert "is a directory; give one file in it" in message, message


def test_a_record_that_is_not_an_example_is_refused(tmp_path):
  path = _write_features(tmp_path / "mixed.tf_record", _dev_features())
  with AtomicTFRecordWriter(str(tmp_path / "mixed2.tf_record")) as writer:
    for record in _records(path)[:2] + [b"\xff\xff not a tf.train.Example"]:
      writer.write(record)
  message = _refusal(tmp_path, tmp_path / "mixed2.tf_record")
  assert "record 2 is not a tf.train.Example" in message, message
  assert "input_ids/input_mask/segment_ids" in message  # what to give instead


def _records(path):
  import tensorflow as tf
  return [record.numpy() for record in tf.data.TFRecordDataset(str(path))]


@pytest.mark.parametrize("name,row,value,bound", [
    ("input_ids", 3, CONFIG.vocab_size, f"[0, {CONFIG.vocab_size}) (the config's vocab_size is "
                                        f"{CONFIG.vocab_size})"),
    ("input_ids", 5, -1, f"[0, {CONFIG.vocab_size}) (the config's vocab_size"),
    ("segment_ids", 4, 7, f"[0, {CONFIG.type_vocab_size}) (the config's type_vocab_size is "
                          f"{CONFIG.type_vocab_size})"),
    ("segment_ids", 0, -2, f"[0, {CONFIG.type_vocab_size})"),
])
def test_ids_outside_the_models_embeddings_are_refused(tmp_path, name, row, value, bound):
  """An id the model has no embedding for: the quantizer's float run would fail in a Gather."""
  features = _dev_features()
  features[name][row, 6] = value
  path = _write_features(tmp_path / "ids.tf_record", features)
  message = _refusal(tmp_path, path)
  assert f"record {row}: {name}[6] is {value}, outside {bound}" in message, message
  assert "write it with this model's tokenizer and config" in message, message


def test_ids_are_checked_against_the_given_config(tmp_path):
  """The same file is refused for a model of a smaller vocabulary, whose bound is named."""
  path = _write_features(tmp_path / "dev.tf_record", _dev_features())
  largest = int(_dev_features()["input_ids"].max())
  small = albert_tf.AlbertConfig(vocab_size=largest, type_vocab_size=2)
  with pytest.raises(errors.DataFormatError, match=f"outside \\[0, {largest}\\)"):
    read_calibration_examples(str(path), small, MAX_SEQ_LENGTH)
  rows = len(_dev_features()["input_ids"])
  assert len(read_calibration_examples(str(path), CONFIG, MAX_SEQ_LENGTH)) == min(rows, 128)


@pytest.mark.slow
def test_the_quantizers_notices_show_only_when_verbose(caplog):
  """ONNX Runtime's quantizer logs its advice and a line per tensor it leaves float through the
  root logger: quiet unless verbose, for both kinds of int8."""
  from albert_tf.export.calibration import synthetic_examples
  model = albert_tf.AlbertModel(CONFIG)
  proto = onnx_export.convert(model, MAX_SEQ_LENGTH)
  calibration = synthetic_examples(CONFIG.vocab_size, [8, 16], 4)
  runs = {"dynamic": lambda verbose: onnx_export.quantize_dynamic(proto, verbose=verbose),
          "static": lambda verbose: onnx_export.quantize_static(proto, calibration,
                                                                verbose=verbose)}
  for kind, quantize in runs.items():
    for verbose in (False, True):
      caplog.clear()
      with caplog.at_level(logging.INFO):
        quantize(verbose)
        assert logging.getLogger().level == logging.INFO  # restored after the call
      notices = [r.getMessage() for r in caplog.records
                 if any(n in r.getMessage() for n in QUANTIZER_NOTICES)]
      assert bool(notices) == verbose, (kind, verbose, notices[:3])


@pytest.mark.slow
def test_binary_names_the_calibration_flag_in_one_line(tmp_path):
  missing = tmp_path / "missing.tf_record"
  result = run_binary("export_onnx", [
      f"--albert_config_file={os.path.join(ORIGINAL_MODEL, 'albert_config.json')}",
      f"--output_file={tmp_path / 'x.onnx'}", "--max_seq_length=48", "--random_weights",
      "--quantize=static", f"--calibration_data={missing}"], check=False)
  assert result.returncode == errors.USAGE_EXIT_CODE
  lines = [line for line in result.stderr.splitlines() if line.startswith("error:")]
  assert len(lines) == 1 and f"--calibration_data: data file not found: {missing}" in lines[0], \
      result.stderr[-2000:]
  assert "Traceback" not in result.stderr
  assert not (tmp_path / "x.onnx").exists()


@pytest.mark.slow
@pytest.mark.parametrize("flags,expected", [
    (["--noreduce_range"], "--noreduce_range with --quantize=none: the weights' range is for "
                           "int8 files"),
    (["--quantize=dynamic_range", "--calibration_data=x.tf_record"],
     "--calibration_data=x.tf_record with --quantize=dynamic_range: calibration is for "
     "--quantize=static"),
])
def test_int8_flags_without_their_int8_are_refused_in_one_line(tmp_path, flags, expected):
  result = run_binary("export_onnx", [
      f"--albert_config_file={os.path.join(ORIGINAL_MODEL, 'albert_config.json')}",
      f"--output_file={tmp_path / 'x.onnx'}", "--max_seq_length=48", "--random_weights"] + flags,
      check=False)
  assert result.returncode == errors.USAGE_EXIT_CODE
  lines = [line for line in result.stderr.splitlines() if line.startswith("error:")]
  assert len(lines) == 1 and expected in lines[0], result.stderr[-2000:]
  assert "Traceback" not in result.stderr and not (tmp_path / "x.onnx").exists()


def test_static_with_ort_fusions_is_refused_before_any_work(tmp_path):
  # On ORT's fused graph the static file dequantized its weights every request (10x slower).
  with pytest.raises(errors.UsageError, match="--ort_optimize with --quantize=static"):
    onnx_export.export_onnx(None, str(tmp_path / "x.onnx"), 48, quantize="static",
                            optimize=True, calibration=[{"input_ids": None}])
  assert not (tmp_path / "x.onnx").exists()
  onnx_export.check_fusions("dynamic_range", True)  # the dynamic file takes the fusions
  onnx_export.check_fusions("static", False)


@pytest.fixture(scope="module")
def static_exports(tmp_path_factory):
  """The fixture MRPC classifier exported float, dynamic int8 and static int8 (QDQ by the binary,
  QOperator by the API), calibrated on its dev features; the Keras outputs and the runtimes'."""
  tmp = tmp_path_factory.mktemp("int8_static")
  features = _dev_features()
  calibration_file = _write_features(tmp / "mrpc_dev.tf_record", features)
  checkpoint = os.path.join(MRPC, "model.ckpt-4")
  paths = {"qdq": tmp / "qdq.onnx", "qoperator": tmp / "qoperator.onnx",
           "dynamic": tmp / "dynamic.onnx", "float": tmp / "float.onnx"}
  binary = run_binary("export_onnx", [
      f"--albert_config_file={os.path.join(ORIGINAL_MODEL, 'albert_config.json')}",
      f"--init_checkpoint={checkpoint}", "--head=classifier", f"--output_file={paths['qdq']}",
      f"--max_seq_length={MAX_SEQ_LENGTH}", "--quantize=static",
      f"--calibration_data={calibration_file}"])
  config = albert_tf.AlbertConfig.from_json_file(os.path.join(ORIGINAL_MODEL,
                                                              "albert_config.json"))
  model = portable.load_exportable_model(config, checkpoint, head="classifier")
  calibration = read_calibration_examples(str(calibration_file), config, MAX_SEQ_LENGTH)
  onnx_export.export_onnx(model, paths["qoperator"], MAX_SEQ_LENGTH, "static",
                          calibration=calibration, quant_format="qoperator")
  onnx_export.export_onnx(model, paths["dynamic"], MAX_SEQ_LENGTH, "dynamic_range")
  onnx_export.export_onnx(model, paths["float"], MAX_SEQ_LENGTH, "none")
  # Requests of their own length, shorter than the export's: [B, 40] with padding.
  request = {name: value[:, :40] for name, value in features.items()}
  keras = {k: np.asarray(v) for k, v in portable.serving_outputs(model, request).items()}
  outputs = _run_in_runtimes(paths.values(), request, tmp)
  return {"paths": paths, "keras": keras, "features": request, "binary_stderr": binary.stderr,
          "outputs": {name: {k.split(":")[1]: v for k, v in outputs.items()
                             if k.startswith(path.name + ":")}
                      for name, path in paths.items()}}


@pytest.mark.slow
@pytest.mark.parametrize("quant_format", ["qdq", "qoperator"])
def test_static_int8_agrees_with_float(static_exports, quant_format):
  outputs = static_exports["outputs"][quant_format]
  keras, mask = static_exports["keras"], static_exports["features"]["input_mask"]
  assert sorted(outputs) == ["pooled_output", "probabilities", "sequence_output"]
  cosine = worst_cosine(outputs["sequence_output"], keras["sequence_output"], mask)
  # The dynamic export's bar (test_portable_exports), the int8 fidelity goal: 0.9996 with 7-bit
  # weights on every x86 CPU, where 8-bit ones gave 0.973 on an AVX2 EPYC (MLAS saturating).
  assert cosine >= 0.999, cosine
  np.testing.assert_array_equal(outputs["probabilities"].argmax(-1),
                                keras["probabilities"].argmax(-1))
  np.testing.assert_allclose(static_exports["outputs"]["float"]["sequence_output"],
                             keras["sequence_output"], atol=1e-4)


def _ops(path):
  import onnx
  return onnx.load(str(path)).graph


def _count(graph, op_type):
  return sum(node.op_type == op_type for node in graph.node)


def _weight_matmuls(graph):
  weights = {init.name for init in graph.initializer}
  return [n for n in graph.node if n.op_type == "MatMul" and weights.intersection(n.input)]


@pytest.mark.slow
def test_static_files_hold_the_asked_formats(static_exports):
  from onnx import TensorProto, numpy_helper
  float_graph = _ops(static_exports["paths"]["float"])
  weight_matmuls = len(_weight_matmuls(float_graph))
  # 3 layers x (Q, K, V, output, 2 FFN) + embedding projection + pooler + classifier.
  assert weight_matmuls == 21
  activation_matmuls = _count(float_graph, "MatMul") - weight_matmuls
  for name in ("qdq", "qoperator"):
    graph = _ops(static_exports["paths"][name])
    # Static: no request pays for finding a range.
    assert _count(graph, "DynamicQuantizeLinear") == 0 and _count(graph, "MatMulInteger") == 0
    inits = {init.name: init for init in graph.initializer}
    producers = {out: node for node in graph.node for out in node.output}
    if name == "qoperator":
      assert _count(graph, "QLinearMatMul") == weight_matmuls
      # The attention scores' matmuls (two activations) stay float.
      assert _count(graph, "MatMul") == activation_matmuls
      for node in (n for n in graph.node if n.op_type == "QLinearMatMul"):
        # a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point
        assert inits[node.input[2]].data_type == TensorProto.UINT8
        b_zero_point = inits[node.input[5]]
        assert b_zero_point.data_type == TensorProto.INT8
        assert numpy_helper.to_array(b_zero_point).size == inits[node.input[3]].dims[-1] > 1
    else:
      assert _count(graph, "QLinearMatMul") == 0
      quantized = 0
      for node in (n for n in graph.node if n.op_type == "MatMul"):
        dequantized = [producers.get(i) for i in node.input]
        if not all(p is not None and p.op_type == "DequantizeLinear" for p in dequantized):
          continue
        quantized += 1
        activation, weight = dequantized
        assert inits[activation.input[2]].data_type == TensorProto.UINT8
        assert numpy_helper.to_array(inits[activation.input[2]]).size == 1
        weight_zero_point = inits[weight.input[2]]
        assert weight_zero_point.data_type == TensorProto.INT8
        assert inits[weight.input[0]].data_type == TensorProto.INT8
        # Per output channel: one scale and zero point per column.
        assert numpy_helper.to_array(weight_zero_point).size == inits[weight.input[0]].dims[-1]
        # The output stays float (ORT's MatMulIntegerToFloat): no QuantizeLinear re-rounds it.
        consumers = [n for n in graph.node if node.output[0] in n.input]
        assert consumers and not any(c.op_type == "QuantizeLinear" for c in consumers), (
            node.name, [c.op_type for c in consumers])
      assert quantized == weight_matmuls


@pytest.mark.slow
def test_int8_weights_are_seven_bit_unless_asked(static_exports):
  """Every int8 file's weights lie in [-64, 64] (reduce_range): MLAS's AVX2 kernel adds pairs
  of u8 x s8 products in int16, which 255 x 127 x 2 overflows and 255 x 64 x 2 does not; an
  8-bit file saturated there (ALBERT-base dynamic int8 on an AVX2 EPYC: cosine to float 0.987).
  reduce_range=False gives the full range back."""
  from onnx import TensorProto, numpy_helper

  def int8_weights(graph):
    return [numpy_helper.to_array(init) for init in graph.initializer
            if init.data_type == TensorProto.INT8 and len(init.dims) == 2]

  for name in ("qdq", "qoperator", "dynamic"):
    weights = int8_weights(_ops(static_exports["paths"][name]))
    assert len(weights) >= 6, name  # the shared block's 6, stored once, and the others'
    assert min(int(w.min()) for w in weights) >= -64, name
    assert max(int(w.max()) for w in weights) <= 64, name
  model = albert_tf.AlbertModel(CONFIG)
  full = onnx_export.quantize_dynamic(onnx_export.convert(model, MAX_SEQ_LENGTH),
                                      reduce_range=False)
  assert max(int(abs(w.astype(np.int32)).max()) for w in int8_weights(full.graph)) == 127


@pytest.mark.slow
def test_the_binary_prints_no_quantizer_notices(static_exports):
  noisy = [line for line in static_exports["binary_stderr"].splitlines()
           if any(notice in line for notice in QUANTIZER_NOTICES)]
  assert not noisy, noisy
