"""Queries an ALBERT SavedModel served by TF Serving, over gRPC or REST.

  python tools/serving_client.py --server=localhost:8500 --text="The cat sat." --text="Hi"
  python tools/serving_client.py --protocol=rest --server=localhost:8501 --text="The cat sat."
  python tools/serving_client.py --signature=tokens --input_ids='[[2, 13, 79, 3]]'

Prints each output as JSON. gRPC uses tensorflow-serving-api's PredictRequest; REST posts the
documented body {"signature_name": ..., "inputs": {...}} to /v1/models/<model>:predict.
"""

import json
import os
import sys
import urllib.error
import urllib.request

from absl import app, flags
import numpy as np

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


def text_inputs(texts, texts_b=None):
  inputs = {"text": np.asarray([t.encode("utf-8") for t in texts], dtype=object)}
  if texts_b is not None:
    if len(texts_b) != len(texts):
      raise ValueError(f"{len(texts)} texts but {len(texts_b)} text_b")
    inputs["text_b"] = np.asarray([t.encode("utf-8") for t in texts_b], dtype=object)
  return inputs


def token_inputs(input_ids, input_mask=None, segment_ids=None, mlm_positions=None):
  ids = np.asarray(input_ids, dtype=np.int32)
  if ids.ndim != 2:
    raise ValueError(f"input_ids must be [batch, length], got shape {list(ids.shape)}")
  inputs = {"input_ids": ids,
            "input_mask": np.asarray(input_mask if input_mask is not None else np.ones_like(ids),
                                     dtype=np.int32),
            "segment_ids": np.asarray(segment_ids if segment_ids is not None
                                      else np.zeros_like(ids), dtype=np.int32)}
  if mlm_positions is not None:
    inputs["mlm_positions"] = np.asarray(mlm_positions, dtype=np.int32)
  return inputs


def predict_request(model_name, signature_name, inputs):
  """A tensorflow_serving PredictRequest holding `inputs` ({name: array})."""
  import tensorflow as tf  # pylint: disable=import-outside-toplevel
  from tensorflow_serving.apis import predict_pb2  # pylint: disable=import-outside-toplevel
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


def predict_grpc(server, request, timeout):
  import grpc  # pylint: disable=import-outside-toplevel
  import tensorflow as tf  # pylint: disable=import-outside-toplevel
  from tensorflow_serving.apis import prediction_service_pb2_grpc  # pylint: disable=import-outside-toplevel
  with grpc.insecure_channel(server) as channel:
    stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
    response = stub.Predict(request, timeout)
  return {name: tf.make_ndarray(proto) for name, proto in response.outputs.items()}


def predict_rest(server, model_name, body, timeout):
  url = f"http://{server}/v1/models/{model_name}:predict"
  data = json.dumps(body).encode("utf-8")
  req = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
  try:
    with urllib.request.urlopen(req, timeout=timeout) as response:
      answer = json.loads(response.read())
  except urllib.error.HTTPError as e:
    raise RuntimeError(f"server answered {e.code}: {e.read().decode('utf-8', 'replace')}") from e
  outputs = answer.get("outputs", answer)
  return outputs if isinstance(outputs, dict) else {"output": outputs}


def _inputs_from_flags():
  if FLAGS.input_ids:
    load = lambda s: json.loads(s) if s else None
    return token_inputs(load(FLAGS.input_ids), load(FLAGS.input_mask), load(FLAGS.segment_ids),
                        load(FLAGS.mlm_positions))
  if not FLAGS.text:
    raise app.UsageError("give --text (text signatures) or --input_ids (token signatures)")
  return text_inputs(FLAGS.text, FLAGS.text_b)


def main(argv):
  del argv
  inputs = _inputs_from_flags()
  if FLAGS.protocol == "grpc":
    outputs = predict_grpc(FLAGS.server, predict_request(FLAGS.model_name, FLAGS.signature,
                                                         inputs), FLAGS.timeout)
  else:
    outputs = predict_rest(FLAGS.server, FLAGS.model_name, rest_body(FLAGS.signature, inputs),
                           FLAGS.timeout)
  for name, value in sorted(outputs.items()):
    print(json.dumps({name: np.asarray(value).tolist()}))


if __name__ == "__main__":
  sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
  app.run(main)
