"""A client of TF Hub-format ALBERT SavedModels written against TF Hub's documented API only:
tensorflow, tensorflow_text, tensorflow_hub, tf_keras (through hub.KerasLayer) and Keras 3's
TFSMLayer. It never imports albert_tf (test_export_tfhub.py runs it in a subprocess and checks
that); what it gets goes to an .npz for the test to compare.

  python tfhub_client.py --encoder=DIR --preprocessor=DIR --wordpiece_preprocessor=DIR \
      --request=request.json --output=out.npz

request.json: {"texts": [...], "pairs": [[a, b], ...], "pair_seq_length": N,
"wordpiece_texts": [...], "features": {input_word_ids, input_mask, input_type_ids,
masked_lm_positions: nested lists}}.
"""

import argparse
import json
import sys

import numpy as np
import tensorflow as tf
import tensorflow_hub as hub
import tensorflow_text  # noqa: F401 -- registers the text ops a SavedModel needs
import keras

ENCODER_INPUTS = ("input_word_ids", "input_mask", "input_type_ids")


def ragged(out, name, value):
  """Stores a RaggedTensor as its flat values and its row splits, outermost first."""
  out[f"{name}.values"] = value.flat_values.numpy()
  for k, splits in enumerate(value.nested_row_splits):
    out[f"{name}.splits{k}"] = splits.numpy()


def encoder_checks(args, request, out):
  encoder = hub.load(args.encoder)
  features = {name: tf.constant(request["features"][name], tf.int32) for name in ENCODER_INPUTS}
  outputs = encoder(features, training=False)
  out["keys"] = np.array(sorted(outputs))
  for name in ("pooled_output", "sequence_output", "default"):
    out[name] = outputs[name].numpy()
  out["encoder_outputs"] = np.stack([x.numpy() for x in outputs["encoder_outputs"]])
  out["variables"] = np.array(len(encoder.variables))
  out["trainable_variables"] = np.array(len(encoder.trainable_variables))
  positions = tf.constant(request["features"]["masked_lm_positions"], tf.int32)
  mlm = encoder.mlm(dict(features, masked_lm_positions=positions), training=False)
  out["mlm_logits"] = mlm["mlm_logits"].numpy()
  out["mlm_sequence_output"] = mlm["sequence_output"].numpy()
  out["mlm_trainable_variables"] = np.array(len(encoder.mlm.trainable_variables))
  # TF Serving's view: the signature, flat outputs.
  signature = tf.saved_model.load(args.encoder).signatures["serving_default"]
  served = signature(**features)
  out["signature_keys"] = np.array(sorted(served))
  out["signature_pooled_output"] = served["pooled_output"].numpy()
  # hub.KerasLayer under tf_keras, fine-tuned: gradients reach every trainable variable.
  layer = hub.KerasLayer(args.encoder, trainable=True)
  with tf.GradientTape() as tape:
    result = layer(features, training=True)
    loss = tf.reduce_sum(result["pooled_output"] ** 2) + tf.reduce_sum(
        result["sequence_output"] ** 2)
  gradients = tape.gradient(loss, layer.trainable_variables)
  out["keras_layer_pooled_output"] = result["pooled_output"].numpy()
  out["keras_layer_gradient_norms"] = np.array(
      [0.0 if g is None else float(tf.norm(tf.convert_to_tensor(g))) for g in gradients])
  # Keras 3's TFSMLayer.
  tfsm = keras.layers.TFSMLayer(args.encoder, call_endpoint="serving_default")
  result = tfsm(features)
  out["tfsm_pooled_output"] = np.asarray(result["pooled_output"])
  out["tfsm_sequence_output"] = np.asarray(result["sequence_output"])
  # Text to vectors, the TF Text tutorial's way: preprocessor, then encoder.
  preprocessor = hub.load(args.preprocessor)
  packed = preprocessor(tf.constant(request["texts"]))
  out["text_pooled_output"] = encoder(packed)["pooled_output"].numpy()


def preprocessor_checks(args, request, out):
  preprocessor = hub.load(args.preprocessor)
  texts = tf.constant(request["texts"])
  ragged(out, "tokens", preprocessor.tokenize(texts))
  special = preprocessor.tokenize.get_special_tokens_dict()
  out["special_names"] = np.array(sorted(special))
  out["special_values"] = np.array([int(special[k]) for k in sorted(special)])
  packed = preprocessor(texts)
  for name in ENCODER_INPUTS:
    out[f"packed.{name}"] = packed[name].numpy()
  a, b = zip(*request["pairs"])
  segments = [preprocessor.tokenize(tf.constant(list(a))),
              preprocessor.tokenize(tf.constant(list(b)))]
  pairs = preprocessor.bert_pack_inputs(segments, seq_length=request["pair_seq_length"])
  for name in ENCODER_INPUTS:
    out[f"pairs.{name}"] = pairs[name].numpy()
  ragged(out, "pair_tokens_a", segments[0])
  ragged(out, "pair_tokens_b", segments[1])
  wordpiece = hub.load(args.wordpiece_preprocessor)
  texts = tf.constant(request["wordpiece_texts"])
  ragged(out, "wordpiece_tokens", wordpiece.tokenize(texts))
  # Ragged rank 2 (words of pieces), two segments, and the default seq_length.
  words = wordpiece.tokenize(texts)
  wordpiece_pairs = wordpiece.bert_pack_inputs([words, words])
  for name in ENCODER_INPUTS:
    out[f"wordpiece_pairs.{name}"] = wordpiece_pairs[name].numpy()
  # Keras 3's TFSMLayer on the preprocessor.
  tfsm = keras.layers.TFSMLayer(args.preprocessor, call_endpoint="serving_default")
  out["tfsm_packed.input_word_ids"] = np.asarray(tfsm(tf.constant(request["texts"]))[
      "input_word_ids"])


def main():
  parser = argparse.ArgumentParser()
  for name in ("encoder", "preprocessor", "wordpiece_preprocessor", "request", "output"):
    parser.add_argument(f"--{name}", required=True)
  args = parser.parse_args()
  with open(args.request, encoding="utf-8") as f:
    request = json.load(f)
  out = {}
  preprocessor_checks(args, request, out)
  encoder_checks(args, request, out)
  out["albert_tf_imported"] = np.array(any(m.split(".")[0] == "albert_tf" for m in sys.modules))
  np.savez(args.output, **out)


if __name__ == "__main__":
  main()
