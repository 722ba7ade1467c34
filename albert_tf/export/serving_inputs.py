"""In-graph checks of what a serving request feeds, so that a bad request fails with a message
saying what was expected and what came, not deep in the model (`indices[0,2] = 2 is not in
[0, 2)`, `Incompatible shapes: [1,1,1,2] vs. [1,4,3,3]`), and never silently (a segment_ids of
another batch size broadcasts; on a GPU an out-of-range id gathers zeros).

The checks run in the graph because TF Serving feeds request tensors as they come: it does not
hold them to the signature's declared shape, nor does a signature called from a loaded SavedModel.
They run one after the other (ranks, then shapes, then values), so that a request with several
problems always reports the first: a later check may rely on an earlier one (a shape's second
entry exists once the rank is 2).
"""

import tensorflow as tf

_IDS = "[batch, length] int32"


def _fed_shape(x):
  """The shape `x` has at run time. A signature declares [None, None], and grappler folds checks
  on the declared rank to true; seen through a PlaceholderWithDefault of unknown shape (at run
  time an identity), the rank is the fed one."""
  return tf.shape(tf.compat.v1.placeholder_with_default(x, shape=None))


def _text(values):
  """An int vector as "[a, b]", for the messages."""
  joined = tf.strings.reduce_join(tf.strings.as_string(values), separator=", ")
  return tf.strings.join(["[", joined, "]"])


def _assert(condition, *parts):
  """tf.Assert whose message joins `parts` (Python strings and string tensors). The error shows
  the message C-escaped: no quotes in it."""
  return tf.debugging.Assert(condition, [tf.strings.join(list(parts))])


def _run_in_order(checks, tensors):
  """Makes each check (a function making an Assert) after the previous one passed, and returns
  `tensors` (a dict) as identities that run only once all passed."""
  done = []
  for make in checks:
    with tf.control_dependencies(done[-1:]):
      done.append(make())
  with tf.control_dependencies(done[-1:]):
    return {name: tf.identity(x) for name, x in tensors.items()}


def _rank_check(name, shape, expected):
  return lambda: _assert(tf.equal(tf.size(shape), 2), f"{name} must be {expected}, got shape ",
                         _text(shape))


def check_token_inputs(features, vocab_size, type_vocab_size, max_position_embeddings,
                       mlm_positions=None):
  """Checks a tokens-style request and returns its tensors gated on the checks.

  features: {"input_ids", "input_mask", "segment_ids", optional "p_mask"}, each int32
  [batch, length] of one shape, 1 <= length <= max_position_embeddings; input_ids in
  [0, vocab_size), segment_ids in [0, type_vocab_size). mlm_positions: int32 [batch, positions]
  in [0, length). Returns (features, mlm_positions).
  """
  named = dict(features)
  if mlm_positions is not None:
    named["mlm_positions"] = mlm_positions
  shapes = {name: _fed_shape(x) for name, x in named.items()}
  ids_shape = shapes["input_ids"]
  checks = [_rank_check(name, shape, _IDS) for name, shape in shapes.items()
            if name != "mlm_positions"]
  checks += [_same_shape_check(name, shape, ids_shape) for name, shape in shapes.items()
             if name not in ("input_ids", "mlm_positions")]
  checks += _length_checks(ids_shape, max_position_embeddings)
  checks += [_range_check("input_ids", named["input_ids"], lambda: vocab_size, "vocab_size"),
             _range_check("segment_ids", named["segment_ids"], lambda: type_vocab_size,
                          "type_vocab_size")]
  checks += [_binary_check(name, named[name]) for name in ("input_mask", "p_mask")
             if name in named]
  if mlm_positions is not None:
    checks += _positions_checks(mlm_positions, shapes["mlm_positions"], ids_shape)
  gated = _run_in_order(checks, named)
  positions = gated.pop("mlm_positions", None)
  return gated, positions


def _same_shape_check(name, shape, ids_shape):
  return lambda: _assert(tf.reduce_all(tf.equal(shape, ids_shape)),
                         f"{name} must have the shape of input_ids, ", _text(ids_shape),
                         ", got ", _text(shape))


def _length_checks(ids_shape, max_position_embeddings):
  # Length 0 has no [CLS] for the pooler; beyond max_position_embeddings, no position embedding.
  return [
      lambda: _assert(ids_shape[1] > 0, "input_ids must hold at least one token per example "
                      "([CLS]), got shape ", _text(ids_shape)),
      lambda: _assert(ids_shape[1] <= max_position_embeddings,
                      f"input_ids length must be at most max_position_embeddings "
                      f"({max_position_embeddings}), got shape ", _text(ids_shape)),
  ]


def _positions_checks(positions, shape, ids_shape):
  return [
      _rank_check("mlm_positions", shape, "[batch, positions] int32"),
      lambda: _assert(tf.equal(shape[0], ids_shape[0]),
                      "mlm_positions must have the batch size of input_ids, ",
                      tf.strings.as_string(ids_shape[0]), ", got shape ", _text(shape)),
      _range_check("mlm_positions", positions, lambda: ids_shape[1], "the length of input_ids"),
  ]


def _range_check(name, x, limit, limit_name):
  """x in [0, limit()); an empty x passes (its min is the dtype's max, its max the dtype's
  min)."""
  def make():
    low, high = tf.reduce_min(x), tf.reduce_max(x)
    bound = tf.cast(limit(), x.dtype)
    return _assert(tf.logical_and(low >= 0, high < bound),
                   f"{name} must be in [0, ", tf.strings.as_string(bound), f") ({limit_name}), "
                   "got values from ", tf.strings.as_string(low), " to ",
                   tf.strings.as_string(high))
  return make


def _binary_check(name, x):
  """x in {0, 1} (a mask: any other value would weigh a position in or out by that factor); an
  empty x passes."""
  def make():
    low, high = tf.reduce_min(x), tf.reduce_max(x)
    return _assert(tf.logical_and(low >= 0, high <= 1),
                   f"{name} must be 0 or 1 (1 for a real token, 0 for padding), got values "
                   "from ", tf.strings.as_string(low), " to ", tf.strings.as_string(high))
  return make


def check_texts(**texts):
  """Checks raw-text inputs ({name: string tensor}, in signature order) and returns them gated.

  Each is [batch] (a scalar, one text, is kept: it has always served as a batch of one, and
  REST's columnar form sends a lone string so); all have one batch size; every text is valid
  UTF-8 (the tokenizer would drop invalid bytes one by one, silently).
  """
  checks = [_text_rank_check(name, _fed_shape(x)) for name, x in texts.items()]
  first, *others = texts
  checks += [_same_size_check(first, texts[first], name, texts[name]) for name in others]
  checks += [_utf8_check(name, x) for name, x in texts.items()]
  return _run_in_order(checks, texts)


def _utf8_check(name, x):
  """Every text of x valid UTF-8: transcoding it to UTF-8 with replacement characters changes
  only invalid ones. The message names the first invalid one's index in the request."""
  def make():
    # Through a PlaceholderWithDefault (see _fed_shape): grappler would drop a reshape of the
    # declared [None] to [-1], leaving a fed scalar a scalar.
    flat = tf.reshape(tf.compat.v1.placeholder_with_default(x, shape=None), [-1])
    valid = tf.equal(tf.strings.unicode_transcode(flat, "UTF-8", "UTF-8", errors="replace",
                                                  replacement_char=0xFFFD), flat)
    first = tf.concat([tf.reshape(tf.where(tf.logical_not(valid)), [-1]),
                       tf.constant([-1], tf.int64)], 0)[0]
    return _assert(tf.reduce_all(valid), f"{name}[", tf.strings.as_string(first),
                   "] is not valid UTF-8 text: send text encoded as UTF-8")
  return make


def _text_rank_check(name, shape):
  return lambda: _assert(tf.size(shape) <= 1, f"{name} must be [batch] string, got shape ",
                         _text(shape))


def _same_size_check(first, x, name, y):
  def make():
    size_x, size_y = tf.size(x), tf.size(y)
    return _assert(tf.equal(size_x, size_y),
                   f"{first} and {name} must have the same batch size, got ",
                   tf.strings.as_string(size_x), " and ", tf.strings.as_string(size_y))
  return make
