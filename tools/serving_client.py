"""Queries an ALBERT SavedModel served by TF Serving, over gRPC or REST.

  python tools/serving_client.py --server=localhost:8500 --text="The cat sat." --text="Hi"
  python tools/serving_client.py --protocol=rest --server=localhost:8501 --text="The cat sat."
  python tools/serving_client.py --signature=tokens --input_ids='[[2, 13, 79, 3]]'

Prints each output as JSON. gRPC uses tensorflow-serving-api's PredictRequest; REST posts the
documented body {"signature_name": ..., "inputs": {...}} to /v1/models/<model>:predict.
A mistake is one `error:` line (no traceback), as the binaries' (albert_tf.core.cli): bad flags
or inputs exit 2, an unreachable server or an error answer 1.
"""

import json
import os
import sys
import urllib.error
import urllib.request

from absl import flags
import numpy as np

# The repository root, for albert_tf when this file runs from a checkout that is not installed.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from albert_tf.core import cli, errors

FLAGS = flags.FLAGS
flags.DEFINE_string("server", "localhost:8500", "host:port (8500 gRPC, 8501 REST by default).")
flags.DEFINE_enum("protocol", "grpc", ["grpc", "rest"], "How to talk to the server.")
flags.DEFINE_string("model_name", "albert", "Model name in the server's config.")
flags.DEFINE_string("signature", "serving_default", "Signature to call.")
flags.DEFINE_multi_string("text", None, "Text(s) for serving_default / serving_text_pair.")
flags.DEFINE_multi_string("text_b", None, "Second segment(s), for serving_text_pair.")
flags.DEFINE_string("input_ids", None, "JSON [[...]] ids for tokens / mlm / sop_log_probs.")
flags.DEFINE_string("input_mask", None, "JSON [[...]]; default: ones.")
flags.DEFINE_string("segment_ids", None, "JSON [[...]]; default: zeros.")
flags.DEFINE_string("mlm_positions", None, "JSON [[...]] for the mlm signature.")
flags.DEFINE_float("timeout", 30.0, "Seconds to wait for the answer.")

_EXAMPLE_IDS = "[[2, 13, 79, 3]]"


class ClientError(errors.AlbertError):
  """A failure reported in one line, without a traceback (exit status 1): no usable answer, or
  no package to ask with."""


class InputError(errors.UsageError):
  """Inputs that cannot make a request (a usage error: exit status 2)."""


class ServerError(ClientError, RuntimeError):
  """No server at the address, or an error answer from it."""


def text_inputs(texts, texts_b=None):
  inputs = {"text": np.asarray([t.encode("utf-8") for t in texts], dtype=object)}
  if texts_b is not None:
    if len(texts_b) != len(texts):
      raise InputError(f"{len(texts)} --text but {len(texts_b)} --text_b: give one --text_b "
                       f"per --text")
    inputs["text_b"] = np.asarray([t.encode("utf-8") for t in texts_b], dtype=object)
  return inputs


def _int_matrix(name, value, what="[batch, length]"):
  """`value` (nested lists) as int32 `what`, else InputError naming `name`."""
  try:
    array = np.asarray(value)
  except ValueError:  # ragged: rows of different lengths
    array = None
  if (array is None or array.ndim != 2
      or (array.size and array.dtype.kind not in "iu")):
    shape = "ragged" if array is None else f"shape {list(array.shape)}, {array.dtype}"
    raise InputError(f"{name} must be {what} ints, a JSON list of equal-length lists such as "
                     f"{_EXAMPLE_IDS}; got {shape}: {str(value)[:200]}")
  return array.astype(np.int32)


def token_inputs(input_ids, input_mask=None, segment_ids=None, mlm_positions=None):
  ids = _int_matrix("input_ids", input_ids)
  inputs = {"input_ids": ids,
            "input_mask": np.ones_like(ids) if input_mask is None
                          else _int_matrix("input_mask", input_mask),
            "segment_ids": np.zeros_like(ids) if segment_ids is None
                           else _int_matrix("segment_ids", segment_ids)}
  for name in ("input_mask", "segment_ids"):
    if inputs[name].shape != ids.shape:
      raise InputError(f"{name} must have the shape of input_ids, {list(ids.shape)}; got "
                       f"{list(inputs[name].shape)}")
  if mlm_positions is not None:
    positions = _int_matrix("mlm_positions", mlm_positions, "[batch, positions]")
    if positions.shape[0] != ids.shape[0]:
      raise InputError(f"mlm_positions must have the batch size of input_ids, {ids.shape[0]}; "
                       f"got shape {list(positions.shape)}")
    inputs["mlm_positions"] = positions
  return inputs


def predict_request(model_name, signature_name, inputs):
  """A tensorflow_serving PredictRequest holding `inputs` ({name: array})."""
  import tensorflow as tf
  from tensorflow_serving.apis import predict_pb2
  request = predict_pb2.PredictRequest()
  request.model_spec.name = model_name
  request.model_spec.signature_name = signature_name
  for name, value in inputs.items():
    request.inputs[name].CopyFrom(tf.make_tensor_proto(value))
  return request


def rest_body(signature_name, inputs):
  """The REST API's columnar body: {"signature_name": ..., "inputs": {name: nested lists}}."""
  def plain(value):
    value = np.asarray(value)
    if value.dtype == object:
      return [v.decode("utf-8") if isinstance(v, bytes) else v for v in value.tolist()]
    return value.tolist()
  return {"signature_name": signature_name,
          "inputs": {name: plain(value) for name, value in inputs.items()}}


def _one_line(text):
  """Server messages (TF errors end in node names on more lines) as one line."""
  return " ".join(str(text).split())


def predict_grpc(server, request, timeout):
  import grpc
  import tensorflow as tf
  from tensorflow_serving.apis import prediction_service_pb2_grpc
  with grpc.insecure_channel(server) as channel:
    stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
    try:
      response = stub.Predict(request, timeout)
    except grpc.RpcError as e:
      raise _grpc_error(server, e, timeout) from e
  return {name: tf.make_ndarray(proto) for name, proto in response.outputs.items()}


def _grpc_error(server, error, timeout):
  import grpc
  code = error.code()
  if code == grpc.StatusCode.UNAVAILABLE:
    return ServerError(f"no gRPC server answers at {server} ({_one_line(error.details())}); is "
                       f"TF Serving running there, with its gRPC port (8500 by default; "
                       f"--protocol=rest for its REST port)?")
  if code == grpc.StatusCode.DEADLINE_EXCEEDED:
    return ServerError(f"the gRPC server at {server} gave no answer within --timeout={timeout} s")
  return ServerError(f"the gRPC server at {server} answered {code.name}: "
                     f"{_one_line(error.details())}")


def predict_rest(server, model_name, body, timeout):
  url = f"http://{server}/v1/models/{model_name}:predict"
  data = json.dumps(body).encode("utf-8")
  req = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
  try:
    with urllib.request.urlopen(req, timeout=timeout) as response:
      answer = json.loads(response.read())
  except urllib.error.HTTPError as e:
    raise ServerError(f"the REST server at {server} answered {e.code}: "
                      f"{_one_line(e.read().decode('utf-8', 'replace'))}") from e
  except (urllib.error.URLError, OSError) as e:  # refused, unknown host, timed out
    reason = e.reason if isinstance(e, urllib.error.URLError) else e
    if isinstance(reason, TimeoutError):
      raise ServerError(f"the REST server at {server} gave no answer within --timeout={timeout} "
                        f"s") from e
    raise ServerError(f"no REST server answers at {server} ({_one_line(reason)}); is TF Serving "
                      f"running there, with its REST port (8501 by default; --protocol=grpc "
                      f"for its gRPC port)?") from e
  outputs = answer.get("outputs", answer)
  return outputs if isinstance(outputs, dict) else {"output": outputs}


def _json_flag(name):
  text = getattr(FLAGS, name)
  if not text:
    return None
  try:
    return json.loads(text)
  except json.JSONDecodeError as e:
    raise InputError(f"--{name} is not valid JSON ({e.msg} at character {e.pos}): {text!r}; "
                     f"give a list of lists of ints such as {_EXAMPLE_IDS}") from e


def _inputs_from_flags():
  if FLAGS.input_ids:
    values = {name: _json_flag(name)
              for name in ("input_ids", "input_mask", "segment_ids", "mlm_positions")}
    return token_inputs(**values)
  if not FLAGS.text:
    raise InputError("give --text (text signatures) or --input_ids (token signatures)")
  return text_inputs(FLAGS.text, FLAGS.text_b)


def _predict(inputs):
  if FLAGS.protocol == "grpc":
    try:
      request = predict_request(FLAGS.model_name, FLAGS.signature, inputs)
    except ImportError as e:
      raise ClientError(f"gRPC needs tensorflow-serving-api ({e}): pip install "
                        f"tensorflow-serving-api, or use --protocol=rest") from e
    return predict_grpc(FLAGS.server, request, FLAGS.timeout)
  return predict_rest(FLAGS.server, FLAGS.model_name, rest_body(FLAGS.signature, inputs),
                      FLAGS.timeout)


def main(argv):
  if len(argv) > 1:
    raise InputError(f"unexpected arguments {argv[1:]}: every setting is a --flag (quote a "
                     "--text with spaces)")
  if not FLAGS.timeout > 0:
    raise InputError(f"--timeout={FLAGS.timeout}: give the seconds to wait, above 0")
  # gRPC requests import TensorFlow.
  from albert_tf.core.startup import quiet_tensorflow_startup
  quiet_tensorflow_startup()
  outputs = _predict(_inputs_from_flags())
  for name, value in sorted(outputs.items()):
    print(json.dumps({name: np.asarray(value).tolist()}))


if __name__ == "__main__":
  cli.run(main)
