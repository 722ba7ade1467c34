"""From per-window model outputs to SQuAD answers, n-best lists and metrics, as the original's
squad_utils (accumulate_predictions_v1/v2, write_predictions_v1/v2, evaluate_v1/v2).

`results` maps each feature's unique_id to a dict of its model outputs under the original's field
names: v1 start_log_prob, end_log_prob [max_seq_length]; v2 start_top_log_probs,
start_top_index [start_n_top], end_top_log_probs, end_top_index [start_n_top * end_n_top],
cls_logits (scalar).
"""

import collections
import json
import math
import re
import string
import sys

from albert_tf.core.io import write_text_atomically

# The n-best list of an example without a valid span: its context gave no window (empty or
# whitespace only) or, rarely, no window's candidates passed the filters. The original writes a
# nonce entry there, text "empty" with log-probs 0 (v1): an answer it invents, which
# predictions.json would then hold and the metrics compare with the gold answers. Here the
# answer is "" (nothing found), with log-probs that rank it below any real span.
NO_SPAN_LOG_PROB = -1e6
NO_SPAN = ("", NO_SPAN_LOG_PROB, NO_SPAN_LOG_PROB)
# The null odds of an example without windows (the original's start value of the minimum).
NULL_ODDS_WITHOUT_WINDOWS = 1000000


def best_indexes(scores, n_best_size):
  """Positions of the n_best_size highest scores, best first (ties keep their order)."""
  ranked = sorted(enumerate(scores), key=lambda x: x[1], reverse=True)
  return [i for i, _ in ranked[:n_best_size]]


def softmax(scores):
  if not scores:
    return []
  top = max(scores)
  exps = [math.exp(s - top) for s in scores]
  total = sum(exps)
  return [e / total for e in exps]


def _features_by_example(features):
  grouped = collections.defaultdict(list)
  for feature in features:
    grouped[feature.example_index].append(feature)
  return grouped


def _valid_span(feature, start_index, end_index, doc_offset, max_answer_length,
                allow_question_start):
  """The original's filters: inside the window's paragraph, start at its max-context window,
  end not before start, not longer than max_answer_length."""
  if start_index - doc_offset >= len(feature.tok_start_to_orig_index):
    return False
  if not allow_question_start and start_index - doc_offset < 0:
    return False
  if end_index - doc_offset >= len(feature.tok_end_to_orig_index):
    return False
  if not feature.token_is_max_context.get(start_index, False):
    return False
  return start_index <= end_index < start_index + max_answer_length


def _candidates(feature, result, n_best_size, max_answer_length, start_n_top, end_n_top):
  """(start, end) paragraph-token spans of one window with their (start, end) log-probs."""
  doc_offset = feature.tokens.index("[SEP]") + 1
  found = collections.OrderedDict()
  if "start_log_prob" in result:  # v1: every start/end pair of the n-best positions
    starts = [float(x) for x in result["start_log_prob"]]
    ends = [float(x) for x in result["end_log_prob"]]
    pairs = [(s, starts[s], e, ends[e]) for s in best_indexes(starts, n_best_size)
             for e in best_indexes(ends, n_best_size)]
    allow_question_start = True  # the original's v1 does not test it (max context rules it out)
  else:  # v2: the beam of start_n_top starts x end_n_top ends
    pairs = []
    for i in range(start_n_top):
      for j in range(end_n_top):
        k = i * end_n_top + j
        pairs.append((int(result["start_top_index"][i]), float(result["start_top_log_probs"][i]),
                      int(result["end_top_index"][k]), float(result["end_top_log_probs"][k])))
    allow_question_start = False
  for start, start_lp, end, end_lp in pairs:
    if _valid_span(feature, start, end, doc_offset, max_answer_length, allow_question_start):
      found.setdefault((start - doc_offset, end - doc_offset), []).append((start_lp, end_lp))
  return found


def _nbest(example, features, results, n_best_size, max_answer_length, start_n_top=None,
           end_n_top=None, v2=False):
  prelim = []
  for feature_index, feature in enumerate(features):
    spans = _candidates(feature, results[feature.unique_id], n_best_size, max_answer_length,
                        start_n_top, end_n_top)
    for (start, end), log_probs in spans.items():
      prelim.append((feature_index, start, end,
                     sum(lp[0] for lp in log_probs) / len(log_probs),
                     sum(lp[1] for lp in log_probs) / len(log_probs)))
  prelim.sort(key=lambda p: p[3] + p[4], reverse=True)
  seen, nbest = set(), []
  for feature_index, start, end, start_lp, end_lp in prelim:
    if len(nbest) >= n_best_size:
      break
    if start >= 0 or v2:
      feature = features[feature_index]
      text = example.paragraph_text[feature.tok_start_to_orig_index[start]:
                                    feature.tok_end_to_orig_index[end] + 1].strip()
      if text in seen:
        continue
    else:  # v1: a start inside the question is the null answer
      text = ""
    seen.add(text)
    nbest.append((text, start_lp, end_lp))
  if not nbest:
    nbest = [NO_SPAN]
  probs = softmax([s + e for _, s, e in nbest])
  return [collections.OrderedDict(text=t, probability=p, start_log_prob=s, end_log_prob=e)
          for (t, s, e), p in zip(nbest, probs)]


def postprocess_v1(examples, features, results, n_best_size, max_answer_length):
  """Returns (predictions {qas_id: text}, nbest {qas_id: [entries]}), as the original."""
  grouped = _features_by_example(features)
  predictions, nbest_json = collections.OrderedDict(), collections.OrderedDict()
  for example_index, example in enumerate(examples):
    nbest = _nbest(example, grouped[example_index], results, n_best_size, max_answer_length)
    predictions[example.qas_id] = nbest[0]["text"]
    nbest_json[example.qas_id] = nbest
  return predictions, nbest_json


def null_scores(examples, features, results):
  """{qas_id: the lowest cls_logits over the example's windows} (the original's null log-odds;
  1000000 for an example without windows)."""
  grouped = _features_by_example(features)
  return collections.OrderedDict(
      (example.qas_id, min([NULL_ODDS_WITHOUT_WINDOWS]
                           + [float(results[f.unique_id]["cls_logits"])
                              for f in grouped[example_index]]))
      for example_index, example in enumerate(examples))


def v2_predictions(nbest_json, null_odds, null_score_diff_threshold=None):
  """The best non-null text, or "" where the null score reaches the threshold."""
  return collections.OrderedDict(
      (qid, entries[0]["text"] if null_score_diff_threshold is None
       or null_odds[qid] < null_score_diff_threshold else "")
      for qid, entries in nbest_json.items())


def postprocess_v2(examples, features, results, n_best_size, max_answer_length, start_n_top,
                   end_n_top, dataset=None):
  """Returns (predictions, nbest, null_odds, metrics) as the original's evaluate_v2: with the
  dev set's answers (`dataset`, the json's "data"), the null threshold that maximises F1 is
  found and applied; without them, no threshold is applied and metrics is None."""
  grouped = _features_by_example(features)
  nbest_json = collections.OrderedDict(
      (example.qas_id, _nbest(example, grouped[i], results, n_best_size, max_answer_length,
                              start_n_top, end_n_top, v2=True))
      for i, example in enumerate(examples))
  null_odds = null_scores(examples, features, results)
  predictions = v2_predictions(nbest_json, null_odds)
  if dataset is None:
    return predictions, nbest_json, null_odds, None
  threshold = evaluate_v2(dataset, predictions, null_odds)["best_f1_thresh"]
  predictions = v2_predictions(nbest_json, null_odds, threshold)
  metrics = evaluate_v2(dataset, predictions, null_odds, search_threshold=False)
  metrics["null_score_diff_threshold"] = threshold
  return predictions, nbest_json, null_odds, metrics


# -- the official SQuAD evaluation ----------------------------------------------------------------
def normalize_answer(s):
  """Lower case, drop punctuation and the articles a/an/the, collapse whitespace."""
  s = "".join(ch for ch in s.lower() if ch not in set(string.punctuation))
  s = re.sub(r"\b(a|an|the)\b", " ", s, flags=re.UNICODE)
  return " ".join(s.split())


def f1_score(prediction, ground_truth, empty_matches_empty=False):
  """Token F1 of normalised answers. The v2.0 script scores an empty answer 1 against an empty
  one (empty_matches_empty); v1.1's scores it 0."""
  pred, gold = normalize_answer(prediction).split(), normalize_answer(ground_truth).split()
  if empty_matches_empty and (not pred or not gold):
    return float(pred == gold)
  same = sum((collections.Counter(pred) & collections.Counter(gold)).values())
  if same == 0:
    return 0.0
  precision, recall = same / len(pred), same / len(gold)
  return 2 * precision * recall / (precision + recall)


def exact_match_score(prediction, ground_truth):
  return float(normalize_answer(prediction) == normalize_answer(ground_truth))


def _questions(dataset):
  for article in dataset:
    for paragraph in article["paragraphs"]:
      yield from paragraph["qas"]


def evaluate_v1(dataset, predictions):
  """{"exact_match", "f1"} in percent over every question of the dataset (a missing prediction
  scores 0)."""
  em = f1 = total = 0
  for qa in _questions(dataset):
    total += 1
    if qa["id"] not in predictions:
      print(f"Unanswered question {qa['id']}  will receive score 0.", file=sys.stderr)
      continue
    golds = [a["text"] for a in qa["answers"]]
    em += max(exact_match_score(predictions[qa["id"]], g) for g in golds)
    f1 += max(f1_score(predictions[qa["id"]], g) for g in golds)
  return {"exact_match": 100.0 * em / total, "f1": 100.0 * f1 / total}


def _raw_scores_v2(dataset, predictions):
  exact, f1 = {}, {}
  for qa in _questions(dataset):
    golds = [a["text"] for a in qa["answers"] if normalize_answer(a["text"])] or [""]
    if qa["id"] not in predictions:
      print(f"Missing prediction for {qa['id']}", file=sys.stderr)
      continue
    pred = predictions[qa["id"]]
    exact[qa["id"]] = max(exact_match_score(g, pred) for g in golds)
    f1[qa["id"]] = max(f1_score(pred, g, empty_matches_empty=True) for g in golds)
  return exact, f1


def _best_threshold(predictions, scores, null_odds, has_answer):
  """The null-odds threshold maximising the score (the official script's search)."""
  score = best = sum(1 for has in has_answer.values() if not has)
  threshold = 0.0
  for qid in sorted(null_odds, key=lambda k: null_odds[k]):
    if qid not in scores:
      continue
    if has_answer[qid]:
      score += scores[qid]
    else:
      score += -1 if predictions[qid] else 0
    if score > best:
      best, threshold = score, null_odds[qid]
  return 100.0 * best / len(scores), threshold


def evaluate_v2(dataset, predictions, null_odds, na_prob_thresh=1.0, search_threshold=True):
  """The official v2.0 metrics: exact, f1, total (with na_prob_thresh applied), and with
  search_threshold best_exact(_thresh) and best_f1(_thresh)."""
  has_answer = {qa["id"]: bool(qa["answers"]) for qa in _questions(dataset)}
  exact, f1 = _raw_scores_v2(dataset, predictions)

  def thresholded(scores):
    return {qid: float(not has_answer[qid]) if null_odds[qid] > na_prob_thresh else s
            for qid, s in scores.items()}

  exact_t, f1_t = thresholded(exact), thresholded(f1)
  total = len(exact_t)
  metrics = collections.OrderedDict(exact=100.0 * sum(exact_t.values()) / total,
                                    f1=100.0 * sum(f1_t.values()) / total, total=total)
  if search_threshold:
    metrics["best_exact"], metrics["best_exact_thresh"] = _best_threshold(
        predictions, exact, null_odds, has_answer)
    metrics["best_f1"], metrics["best_f1_thresh"] = _best_threshold(
        predictions, f1, null_odds, has_answer)
  return metrics


def write_json(path, value, ensure_ascii=True):
  """json.dumps(indent=4) + newline, as the original writes its predictions files; atomic.
  ensure_ascii=False writes non-ASCII characters as they are (the CMRC 2018 baseline's
  predictions.json) rather than as \\u escapes."""
  write_text_atomically(path, json.dumps(value, indent=4, ensure_ascii=ensure_ascii) + "\n")
