"""Windows over a sequence longer than a model's input (SQuAD's paragraphs, NER's sentences), and
the original's max-context rule that picks, for each position, the one window whose prediction
counts. Plain Python."""

from albert_tf.core import errors


def doc_spans(num_tokens, max_tokens_for_doc, doc_stride):
  """(start, length) windows over the paragraph tokens, advancing by doc_stride.

  Raises:
    errors.UsageError: doc_stride or max_tokens_for_doc below 1 (no window would ever end).
  """
  if doc_stride < 1 or max_tokens_for_doc < 1:
    raise errors.UsageError(
        f"windows of {max_tokens_for_doc} pieces every {doc_stride} (--doc_stride): both must "
        "be at least 1, or the windows never reach the end; raise --doc_stride (or "
        "--max_seq_length)")
  spans, start = [], 0
  while start < num_tokens:
    length = min(num_tokens - start, max_tokens_for_doc)
    spans.append((start, length))
    if start + length == num_tokens:
      break
    start += min(length, doc_stride)
  return spans


def is_max_context(spans, span_index, position):
  """Whether span span_index gives `position` its most balanced context (min of left and right
  context, plus 0.01 x span length; the first best span wins)."""
  best_score, best_index = None, None
  for index, (start, length) in enumerate(spans):
    end = start + length - 1
    if position < start or position > end:
      continue
    score = min(position - start, end - position) + 0.01 * length
    if best_score is None or score > best_score:
      best_score, best_index = score, index
  return span_index == best_index
