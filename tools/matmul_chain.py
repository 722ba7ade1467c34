"""Times the model's own matmul chain: the encoder's GEMMs of one request, alone, at the
request's shapes. Nothing else a request runs (gathers, softmax, LayerNorm, GELU, bias and
residual adds) is in it, so the chain is the least time a request of that shape can take in that
runtime on this CPU: tools/cpu_check.py measures it in the same run as the reference of its
SavedModel and int8 bars.

  python3 tools/matmul_chain.py --config=base --tokens=8,128

For B x T tokens (--batch_size, --tokens) of --config's encoder, with E = embedding_size,
H = hidden_size, I = intermediate_size, N = num_attention_heads and d = H / N, the chain is:

  embedding projection (E != H)   [B*T, E] x [E, H]            once
  each block (num_hidden_layers x inner_group_num, in order):
    query, key, value             [B*T, H] x [H, H]
    scores                        [B*N, T, d] x [B*N, d, T]
    context                       [B*N, T, T] x [B*N, T, d]
    attention output              [B*T, H] x [H, H]
    FFN in, FFN out               [B*T, H] x [H, I], [B*T, I] x [I, H]
  pooler (each first token)       [B, H] x [H, H]

Its FLOPs (2 per multiply-add) are tools/benchmark.py's pretraining_flops less the masked-LM and
sentence-order heads. Each block reads the weight tensors the model's block reads, as its
parameter_sharing has them: ALBERT's (all-shared) layers all read one block's, so a request streams
the same weights every layer, and so does the chain. The heads' reshapes are views (the key is
taken as [B*N, d, T] as it lies, with no transpose), so the chain has the model's GEMM shapes, not
its meaning. The weights are random, drawn as the model initializes them (normal,
initializer_range: int8 quantizes them with real per-channel ranges); the input is zeros, so every
product is exactly zero in every precision. Without the softmax and normalisations between them the
products of random inputs would leave any format's range within a few layers (a block is cubic in
its input), through denormals or to NaN; no GEMM kernel here looks at the values (random inputs,
which reach NaN, gave p50s within 3% of zeros' in all three precisions: ALBERT-base, 128 tokens, a
2-thread AMD EPYC with AVX512-BF16).

--precisions (each a line per tokens and batch size; default all three):
  float32, bfloat16  TensorFlow: the chain as one tf.function without XLA, as the SavedModel
                     serves, its weights tf.Variables of that dtype; TensorFlow's own threads, or
                     --threads intra-op threads. bfloat16 is fast only where the CPU has bf16
                     units (AMX-BF16 or AVX512-BF16: albert_tf.core.hardware); elsewhere
                     TensorFlow converts it, and the line's `note` says so.
  int8               ONNX Runtime's integer GEMMs: the chain as an ONNX graph of MatMuls with
                     float32 weights, quantized as export_onnx --quantize=dynamic_range does
                     (albert_tf.export.onnx.quantize_dynamic: per-channel int8 weights in 7
                     bits, activations quantized per request; the scores and context MatMuls,
                     activation by activation, stay float as in the export), run with --threads
                     intra-op threads (default: every CPU thread). It needs the portable extra
                     (onnx, onnxruntime): without it its line has `error`, the others print.
  onnx_float32       The same ONNX graph unquantized, in ONNX Runtime's float32 GEMMs (the
                     float32 ONNX export's runtime), with the int8 chain's threads and extra.
                     Where TensorFlow's cost per op dominates (short requests) it is the lower
                     float32 limit of the two.

Each is timed as tools/benchmark.py times a serving request: --warmup_steps untimed calls, then
--requests timed ones (a sixth of them, at least 3, above batch 1). One JSON line per
(precision, tokens, batch size): {"mode": "matmul_chain", "precision", "tokens", "batch_size",
"p50_ms", "p99_ms", "examples_per_second", "requests", "flops", "threads", "runtime"} (and
`onednn`, whether TensorFlow ran it in oneDNN; `note`; or `error` in place of the timings).
"""

import math
import os

from absl import flags
import numpy as np

import benchmark  # tools/benchmark.py: importable without defining its flags

from albert_tf.core import cli, errors, hardware

FLAGS = flags.FLAGS

PRECISIONS = ("float32", "bfloat16", "int8", "onnx_float32")
# The precisions ONNX Runtime runs; TensorFlow runs the others.
ONNX_PRECISIONS = ("int8", "onnx_float32")


def define_flags():
  """The command line's flags (only when run as a program, as tools/benchmark.py's)."""
  flags.DEFINE_string("config", "base", "Preset name or path to an albert_config.json.")
  flags.DEFINE_list("tokens", ["8", "128"],
                    "The request's length in tokens; several separated by commas.")
  flags.DEFINE_list("batch_size", ["1"],
                    "Sequences per request; several separated by commas.")
  flags.DEFINE_list("precisions", list(PRECISIONS),
                    "What to time, separated by commas: float32 and bfloat16 (TensorFlow), int8 "
                    "(ONNX Runtime's dynamic int8), onnx_float32 (ONNX Runtime's float32).")
  flags.DEFINE_integer("threads", None,
                       "CPU threads: TensorFlow's intra-op threads and ONNX Runtime's. Default: "
                       "every CPU thread (TensorFlow's own default, as the SavedModel runs).",
                       lower_bound=1)
  flags.DEFINE_integer("warmup_steps", 2, "Untimed calls first (tracing, the runtimes' caches).",
                       lower_bound=0)
  flags.DEFINE_integer("requests", 30, "Timed calls per batch-1 measurement (a sixth of them, at "
                       "least 3, for larger batches).", lower_bound=1)


# -- the chain ------------------------------------------------------------------------------------
def block_weights(config):
  """The weights each block of the encoder reads, in order: a list of (the attention's name, the
  FFN's name), one per block, as the model's parameter sharing has them.

  Args:
    config: an AlbertConfig.

  Returns:
    num_hidden_layers x inner_group_num pairs of str: equal names are the same tensors.
  """
  layers, groups = config.num_hidden_layers, config.num_parameter_groups
  out = []
  for layer in range(layers):
    # albert_tf.layers.transformer.group_index's arithmetic (that module loads TensorFlow).
    group = int(layer / layers * groups)
    for inner in range(config.inner_group_num):
      shared, own = f"group_{group}/inner_{inner}", f"layer_{layer}/inner_{inner}"
      out.append((own if config.parameter_sharing == "shared-FFN" else shared,
                  own if config.parameter_sharing == "shared-attention" else shared))
  return out


def encoder_chain(config, tokens, batch_size, ops, x):
  """The chain of one request (see the module docstring) in the tensors of `ops`.

  Args:
    config: an AlbertConfig.
    tokens: T, the request's length.
    batch_size: B, its sequences.
    ops: the runtime: ShapeOps, TensorFlowOps or OnnxOps (weight, matmul, reshape,
      first_tokens).
    x: the embeddings, [B*T, E], in that runtime.

  Returns:
    The pooler's product, [B, H].
  """
  b, t = batch_size, tokens
  e, h, i = config.embedding_size, config.hidden_size, config.intermediate_size
  heads = config.num_attention_heads
  d = h // heads
  if e != h:
    x = ops.matmul(x, ops.weight("projection", (e, h)))
  for attention, ffn in block_weights(config):
    q = ops.matmul(x, ops.weight(f"{attention}/query", (h, h)))
    k = ops.matmul(x, ops.weight(f"{attention}/key", (h, h)))
    v = ops.matmul(x, ops.weight(f"{attention}/value", (h, h)))
    scores = ops.matmul(ops.reshape(q, (b * heads, t, d)), ops.reshape(k, (b * heads, d, t)))
    context = ops.matmul(scores, ops.reshape(v, (b * heads, t, d)))
    x = ops.matmul(ops.reshape(context, (b * t, h)), ops.weight(f"{attention}/output", (h, h)))
    x = ops.matmul(ops.matmul(x, ops.weight(f"{ffn}/ffn_in", (h, i))),
                   ops.weight(f"{ffn}/ffn_out", (i, h)))
  first = ops.first_tokens(ops.reshape(x, (b, t, h)))
  return ops.matmul(first, ops.weight("pooler", (h, h)))


class ShapeOps:
  """The chain on shapes (tuples): counts its FLOPs and lists the weights it reads.

  Attributes:
    flops: 2 per multiply-add of every matmul so far.
    matmuls: the matmuls so far.
    weights: {name: shape} of the weights read, each once.
  """

  def __init__(self):
    self.flops, self.matmuls, self.weights = 0, 0, {}

  def weight(self, name, shape):
    self.weights.setdefault(name, tuple(shape))
    return tuple(shape)

  def matmul(self, a, b):
    if a[-1] != b[-2] or a[:-2] != b[:-2]:
      raise ValueError(f"matmul of {a} by {b}")
    self.flops += 2 * math.prod(a) * b[-1]
    self.matmuls += 1
    return a[:-1] + b[-1:]

  def reshape(self, x, shape):
    if math.prod(x) != math.prod(shape):
      raise ValueError(f"reshape of {x} to {shape}")
    return tuple(shape)

  def first_tokens(self, x):
    return (x[0], x[2])


def chain_spec(config, tokens, batch_size):
  """The chain's ShapeOps (its FLOPs, matmuls and weights) at `tokens` x `batch_size`."""
  spec = ShapeOps()
  encoder_chain(config, tokens, batch_size, spec, (batch_size * tokens, config.embedding_size))
  return spec


def chain_weights(config, seed=0):
  """The chain's weights, {name: float32 numpy array}, as the model draws its own: normal, of
  standard deviation initializer_range. They are the same at every request shape."""
  rng = np.random.default_rng(seed)
  std = np.float32(config.initializer_range)
  return {name: rng.standard_normal(shape, dtype=np.float32) * std
          for name, shape in chain_spec(config, 1, 1).weights.items()}


def chain_input(config, tokens, batch_size):
  """The chain's input, the embeddings [B*T, E]: zeros (see the module docstring)."""
  return np.zeros((batch_size * tokens, config.embedding_size), np.float32)


class TensorFlowOps:
  """The chain in TensorFlow, on the weights {name: tf.Variable} given."""

  def __init__(self, weights):
    import tensorflow as tf
    self.tf, self.weights = tf, weights

  def weight(self, name, shape):
    del shape  # made beforehand (chain_weights)
    return self.weights[name]

  def matmul(self, a, b):
    return self.tf.linalg.matmul(a, b)

  def reshape(self, x, shape):
    return self.tf.reshape(x, shape)

  def first_tokens(self, x):
    return x[:, 0]


class OnnxOps:
  """The chain as ONNX nodes: tensors are their names; weights become initializers, once."""

  def __init__(self, weights):
    from onnx import helper, numpy_helper
    self.helper, self.numpy_helper = helper, numpy_helper
    self.arrays, self.nodes, self.initializers = weights, [], {}

  def _constant(self, name, array):
    if name not in self.initializers:
      self.initializers[name] = self.numpy_helper.from_array(array, name)
    return name

  def _node(self, op, inputs, **attributes):
    name = f"{op.lower()}_{len(self.nodes)}"
    self.nodes.append(self.helper.make_node(op, inputs, [name], name=name, **attributes))
    return name

  def weight(self, name, shape):
    del shape  # made beforehand (chain_weights)
    return self._constant(name, self.arrays[name])

  def matmul(self, a, b):
    return self._node("MatMul", [a, b])

  def reshape(self, x, shape):
    dims = "x".join(map(str, shape))
    return self._node("Reshape", [x, self._constant(f"shape_{dims}", np.array(shape, np.int64))])

  def first_tokens(self, x):
    return self._node("Gather", [x, self._constant("first", np.array(0, np.int64))], axis=1)

  def model(self, x, x_shape, output, output_shape, opset):
    """The ModelProto of the nodes so far: input `x`, output `output` (float32)."""
    helper, float32 = self.helper, 1  # TensorProto.FLOAT
    graph = helper.make_graph(
        self.nodes, "matmul_chain", [helper.make_tensor_value_info(x, float32, x_shape)],
        [helper.make_tensor_value_info(output, float32, output_shape)],
        list(self.initializers.values()))
    opsets = [helper.make_opsetid("", opset)]
    # The least IR version of the opset, not onnx's newest: a runtime older than the onnx
    # package refuses a file of a newer IR version, whatever its ops.
    return helper.make_model(graph, opset_imports=opsets,
                             ir_version=helper.find_min_ir_version_for(opsets))


# -- the runtimes ---------------------------------------------------------------------------------
def tensorflow_call(config, tokens, batch_size, precision, weights, x):
  """A call of the chain in TensorFlow at `precision` (float32 or bfloat16), ready to time: one
  tf.function, XLA off, as the SavedModel serves. Returns fn() -> [B, H]."""
  import tensorflow as tf
  variables = {name: tf.Variable(tf.cast(array, precision), trainable=False)
               for name, array in weights.items()}
  ops = TensorFlowOps(variables)
  inputs = tf.cast(x, precision)
  chain = tf.function(lambda x: encoder_chain(config, tokens, batch_size, ops, x),
                      jit_compile=False)
  return lambda: chain(inputs)


def onnx_call(config, tokens, batch_size, weights, x, threads, int8=True, verbose=False):
  """A call of the chain in ONNX Runtime with `threads` intra-op threads: dynamically quantized to
  int8 as the int8 ONNX export is, or in float32 as the float32 export runs. Returns
  fn() -> {"pooled": [B, H]}.

  Raises:
    errors.MissingExtraError: onnx or onnxruntime is not installed.
  """
  command = f"tools/matmul_chain.py --precisions={'int8' if int8 else 'onnx_float32'}"
  errors.require_module("onnx", "portable", command)
  ort = errors.require_module("onnxruntime", "portable", command)
  from albert_tf.export.onnx import DEFAULT_OPSET, quantize_dynamic
  ops = OnnxOps(weights)
  output = encoder_chain(config, tokens, batch_size, ops, "x")
  proto = ops.model("x", list(x.shape), output, [batch_size, config.hidden_size], DEFAULT_OPSET)
  if int8:
    proto = quantize_dynamic(proto, verbose=verbose)
  # As export.portable_runtime.OnnxRunner runs the exports.
  options = ort.SessionOptions()
  options.intra_op_num_threads = threads
  options.inter_op_num_threads = 1
  session = ort.InferenceSession(proto.SerializeToString(), options,
                                 providers=["CPUExecutionProvider"])
  return lambda: {"pooled": session.run([output], {"x": x})[0]}


def measure(config, weights, tokens, batch_size, precision, threads, warmup, requests,
            verbose=False):
  """One line: the chain of `precision` at `tokens` x `batch_size`, timed.

  Args:
    config: an AlbertConfig.
    weights: chain_weights(config).
    tokens, batch_size: T and B.
    precision: one of PRECISIONS.
    threads: --threads, or None for TensorFlow's default (every CPU thread for ONNX Runtime).
    warmup, requests: untimed calls, then timed batch-1 calls (fewer above batch 1, as
      tools/benchmark.py's serving lines).
    verbose: show ONNX Runtime's quantizer notices.

  Returns:
    The line (see the module docstring); `error` instead of the timings when int8 lacks the
    portable extra.
  """
  x = chain_input(config, tokens, batch_size)
  fields = {"mode": "matmul_chain", "precision": precision, "tokens": tokens,
            "batch_size": batch_size, "flops": chain_spec(config, tokens, batch_size).flops,
            "threads": threads or os.cpu_count(),
            "runtime": "onnxruntime" if precision in ONNX_PRECISIONS else "tensorflow"}
  if precision in ONNX_PRECISIONS:
    try:
      call = onnx_call(config, tokens, batch_size, weights, x, fields["threads"],
                       int8=precision == "int8", verbose=verbose)
    except errors.MissingExtraError as e:
      return dict(fields, error=str(e))
  else:
    call = tensorflow_call(config, tokens, batch_size, precision, weights, x)
    from albert_tf.core import onednn
    fields["onednn"] = onednn.tensorflow_uses_onednn()
    if precision == "bfloat16" and not hardware.has_native_bf16():
      fields["note"] = (f"no bf16 units on {hardware.cpu_name()}: TensorFlow converts bfloat16 "
                        "to float32 here, slower than float32")
  line, _ = benchmark._timed_line(call, warmup, benchmark._request_count(requests, batch_size),
                                  batch_size, **fields)
  return line


# -- the command line -----------------------------------------------------------------------------
def check_flags():
  """The flags' values: (config, token counts, batch sizes, precisions). Raises a usage error,
  naming the flag and the fix, before TensorFlow loads."""
  try:
    config = benchmark.load_config(FLAGS.config)
  except (FileNotFoundError, ValueError) as e:  # albert_tf's ConfigError is a ValueError
    raise errors.UsageError(f"--config={FLAGS.config}: {e}") from None
  tokens = benchmark._positive_ints("tokens", FLAGS.tokens)
  batches = benchmark._positive_ints("batch_size", FLAGS.batch_size)
  if max(tokens) > config.max_position_embeddings:
    raise errors.UsageError(
        f"--tokens={','.join(FLAGS.tokens)}: over the config's max_position_embeddings "
        f"({config.max_position_embeddings}); give lengths up to it, or a config with more "
        "positions")
  unknown = [p for p in FLAGS.precisions if p not in PRECISIONS]
  if unknown or not FLAGS.precisions:
    raise errors.UsageError(f"--precisions={','.join(FLAGS.precisions)}: choose from "
                            f"{', '.join(PRECISIONS)}")
  return config, tokens, batches, list(dict.fromkeys(FLAGS.precisions))


def main(argv):
  if len(argv) > 1:
    raise errors.UsageError(f"unexpected arguments {argv[1:]}: every setting is a --flag")
  config, token_counts, batch_sizes, precisions = check_flags()
  from albert_tf.core.startup import quiet_tensorflow_startup
  quiet_tensorflow_startup()  # before TensorFlow's first import
  if FLAGS.threads and set(precisions) - set(ONNX_PRECISIONS):
    import tensorflow as tf
    tf.config.threading.set_intra_op_parallelism_threads(FLAGS.threads)
  weights = chain_weights(config)
  for tokens in token_counts:
    for batch_size in batch_sizes:
      for precision in precisions:
        benchmark.report(measure(config, weights, tokens, batch_size, precision, FLAGS.threads,
                                 FLAGS.warmup_steps, FLAGS.requests, FLAGS.verbose))
  return 0


if __name__ == "__main__":
  define_flags()
  cli.run(main)
