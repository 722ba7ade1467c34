"""An independent NumPy forward pass of the original ALBERT graph, written from its equations.

It reads weights by their original TF1 names, so tests can compare our Keras model (loaded from a
checkpoint) against it without sharing any code with albert_tf.
"""

import math

import numpy as np


def gelu(x):
  return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


ACTIVATIONS = {"gelu": gelu, "relu": lambda x: np.maximum(x, 0.0), "tanh": np.tanh,
               "linear": lambda x: x}


def layer_norm(x, gamma, beta, eps=1e-12):
  mean = x.mean(-1, keepdims=True)
  var = ((x - mean) ** 2).mean(-1, keepdims=True)
  return (x - mean) / np.sqrt(var + eps) * gamma + beta


def softmax(x):
  x = x - x.max(-1, keepdims=True)
  e = np.exp(x)
  return e / e.sum(-1, keepdims=True)


def log_softmax(x):
  x = x - x.max(-1, keepdims=True)
  return x - np.log(np.exp(x).sum(-1, keepdims=True))


def dense(w, prefix, x):
  return x @ w[prefix + "/kernel"] + w[prefix + "/bias"]


def block(w, p, x, mask, cfg):
  """One attention + FFN block under scope p. x [B, T, H]; mask [B, T]."""
  act = ACTIVATIONS[cfg["hidden_act"]]
  b, t, h = x.shape
  n = cfg["num_attention_heads"]
  d = h // n
  heads = lambda y: y.reshape(b, t, n, d).transpose(0, 2, 1, 3)
  q = heads(dense(w, p + "/attention_1/self/query", x))
  k = heads(dense(w, p + "/attention_1/self/key", x))
  v = heads(dense(w, p + "/attention_1/self/value", x))
  logits = q @ k.transpose(0, 1, 3, 2) / math.sqrt(d)
  logits = logits + (1.0 - mask[:, None, None, :]) * -10000.0
  ctx = (softmax(logits) @ v).transpose(0, 2, 1, 3).reshape(b, t, h)
  att = dense(w, p + "/attention_1/output/dense", ctx)
  att = layer_norm(att + x, w[p + "/LayerNorm/gamma"], w[p + "/LayerNorm/beta"])
  inter = act(dense(w, p + "/ffn_1/intermediate/dense", att))
  ffn = dense(w, p + "/ffn_1/intermediate/output/dense", inter)
  return layer_norm(ffn + att, w[p + "/LayerNorm_1/gamma"], w[p + "/LayerNorm_1/beta"])


def forward(w, cfg, input_ids, input_mask, segment_ids, masked_lm_positions=None):
  """Returns a dict like AlbertModel's (plus MLM/SOP log-probs when the cls/ weights exist)."""
  w = {k: np.asarray(v, np.float64) for k, v in w.items()}
  mask = np.asarray(input_mask, np.float64)
  t = input_ids.shape[1]
  emb = (w["bert/embeddings/word_embeddings"][input_ids]
         + w["bert/embeddings/token_type_embeddings"][segment_ids]
         + w["bert/embeddings/position_embeddings"][:t][None])
  emb = layer_norm(emb, w["bert/embeddings/LayerNorm/gamma"], w["bert/embeddings/LayerNorm/beta"])
  x = emb
  if cfg["embedding_size"] != cfg["hidden_size"]:
    x = dense(w, "bert/encoder/embedding_hidden_mapping_in", x)
  layers = []
  num_layers, num_groups = cfg["num_hidden_layers"], cfg["num_hidden_groups"]
  for layer in range(num_layers):
    group = int(layer / num_layers * num_groups)
    for inner in range(cfg["inner_group_num"]):
      x = block(w, f"bert/encoder/transformer/group_{group}/inner_group_{inner}", x, mask, cfg)
      layers.append(x)
  pooled = np.tanh(dense(w, "bert/pooler/dense", x[:, 0]))
  out = {"embedding_output": emb, "encoder_outputs": layers, "sequence_output": x,
         "pooled_output": pooled}
  if masked_lm_positions is not None and "cls/predictions/output_bias" in w:
    act = ACTIVATIONS[cfg["hidden_act"]]
    gathered = np.take_along_axis(x, masked_lm_positions[..., None], axis=1)
    y = act(dense(w, "cls/predictions/transform/dense", gathered))
    y = layer_norm(y, w["cls/predictions/transform/LayerNorm/gamma"],
                   w["cls/predictions/transform/LayerNorm/beta"])
    logits = y @ w["bert/embeddings/word_embeddings"].T + w["cls/predictions/output_bias"]
    out["masked_lm_log_probs"] = log_softmax(logits)
    sop = (pooled @ w["cls/seq_relationship/output_weights"].T
           + w["cls/seq_relationship/output_bias"])
    out["sentence_order_log_probs"] = log_softmax(sop)
  return out


def random_weights(cfg, rng, with_heads=True, scale=0.2):
  """Random weights under the original names for `cfg` (a dict), float32."""
  e, h, i = cfg["embedding_size"], cfg["hidden_size"], cfg["intermediate_size"]
  shapes = {
      "bert/embeddings/word_embeddings": (cfg["vocab_size"], e),
      "bert/embeddings/token_type_embeddings": (cfg["type_vocab_size"], e),
      "bert/embeddings/position_embeddings": (cfg["max_position_embeddings"], e),
      "bert/embeddings/LayerNorm/gamma": (e,), "bert/embeddings/LayerNorm/beta": (e,),
      "bert/pooler/dense/kernel": (h, h), "bert/pooler/dense/bias": (h,),
  }
  if e != h:
    shapes["bert/encoder/embedding_hidden_mapping_in/kernel"] = (e, h)
    shapes["bert/encoder/embedding_hidden_mapping_in/bias"] = (h,)
  for g in range(cfg["num_hidden_groups"]):
    for inner in range(cfg["inner_group_num"]):
      p = f"bert/encoder/transformer/group_{g}/inner_group_{inner}"
      for part in ("query", "key", "value"):
        shapes[f"{p}/attention_1/self/{part}/kernel"] = (h, h)
        shapes[f"{p}/attention_1/self/{part}/bias"] = (h,)
      shapes[f"{p}/attention_1/output/dense/kernel"] = (h, h)
      shapes[f"{p}/attention_1/output/dense/bias"] = (h,)
      shapes[f"{p}/ffn_1/intermediate/dense/kernel"] = (h, i)
      shapes[f"{p}/ffn_1/intermediate/dense/bias"] = (i,)
      shapes[f"{p}/ffn_1/intermediate/output/dense/kernel"] = (i, h)
      shapes[f"{p}/ffn_1/intermediate/output/dense/bias"] = (h,)
      for ln in ("LayerNorm", "LayerNorm_1"):
        shapes[f"{p}/{ln}/gamma"] = (h,)
        shapes[f"{p}/{ln}/beta"] = (h,)
  if with_heads:
    shapes.update({
        "cls/predictions/transform/dense/kernel": (h, e),
        "cls/predictions/transform/dense/bias": (e,),
        "cls/predictions/transform/LayerNorm/gamma": (e,),
        "cls/predictions/transform/LayerNorm/beta": (e,),
        "cls/predictions/output_bias": (cfg["vocab_size"],),
        "cls/seq_relationship/output_weights": (2, h),
        "cls/seq_relationship/output_bias": (2,),
    })
  weights = {}
  for name, shape in shapes.items():
    value = rng.normal(0.0, scale, size=shape)
    if name.endswith("gamma"):
      value += 1.0
    weights[name] = value.astype(np.float32)
  return weights
