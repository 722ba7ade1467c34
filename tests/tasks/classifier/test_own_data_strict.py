"""Own data that cannot go silently wrong: run_classifier's own CSV/TSV/JSONL files are
read as written or refused, naming file:line and the fix. Ragged rows, a column named twice, CSV
quoting errors and fields of any size; scores that are not finite numbers; label names that are
empty, that hold what the outputs join names with, or one number written two ways; and the
binary's own flags outside their range (--threshold, --threshold_to_export, a --warmup_step past
--train_step), as one `error:` line (exit 2). No TensorFlow."""

import csv
import json
import types

import pytest

from albert_tf.core import errors, settings
from albert_tf.tasks.classifier import own_data
from albert_tf.tasks.classifier.settings import OwnDataSettings
from helpers import run_binary


def _write(tmp_path, name, content):
  path = tmp_path / name
  path.write_text(content, encoding="utf-8", newline="")
  return str(path)


def _jsonl(tmp_path, *rows, name="t.jsonl"):
  return _write(tmp_path, name, "".join(json.dumps(row) + "\n" for row in rows))


def _read(path, split="train", **spec):
  """The split's examples and label names, as run_classifier resolves them (training)."""
  processor = own_data.OwnDataProcessor(own_data.OwnDataSpec(files={split: path}, **spec))
  names, _, _ = own_data.resolve_labels(processor, spec.get("label_list"), None, None,
                                        training=True)
  return [example for _, example in processor.read_split(split)], names


def _refused(path, message, error=errors.DataFormatError, **spec):
  with pytest.raises(error) as raised:
    _read(path, **spec)
  assert message in str(raised.value), raised.value
  return str(raised.value)


# ---- rows ------------------------------------------------------------------------------------
def test_an_unquoted_comma_is_refused_and_a_quoted_one_reads(tmp_path):
  # Before, read as the text "I liked it" and the label " a lot".
  _refused(_write(tmp_path, "t.csv", "text,label\nfine,pos\nI liked it, a lot,pos\n"),
           't.csv:3: 3 fields, but the header (line 1) has 2: enclose a field holding a comma in '
           'double quotes ("I liked it, a lot")')
  # Quoted, it reads; a row with fewer fields than the header keeps those it has.
  path = _write(tmp_path, "q.csv", 'text,label,note\n"I liked it, a lot",pos\n')
  examples, names = _read(path)
  assert [(e.text_a, e.label) for e in examples] == [("i liked it, a lot", "pos")]
  assert names == ["pos"]


@pytest.mark.parametrize("name, content, spec, message", [
    # TSV has no quoting: the quoted tab split the text.
    ("t.tsv", 'text\tlabel\n"a\tb"\tpos\n', {},
     "t.tsv:2: 3 fields, but the header (line 1) has 2: TSV has no quoting"),
    ("t.csv", "fine,pos\nI liked it, a lot,pos\n", {"text_column": "0", "label_column": "1"},
     "t.csv:2: 3 fields, but the first row (line 1) has 2"),
])
def test_a_row_with_more_fields_than_the_header_is_refused(tmp_path, name, content, spec,
                                                           message):
  _refused(_write(tmp_path, name, content), message, **spec)


def test_a_header_naming_a_column_twice_is_refused(tmp_path):
  # Before, the last `label` won silently.
  _refused(_write(tmp_path, "t.csv", "text,label,label\nfine,pos,neg\n"),
           "t.csv:1: the header names column 'label' twice: give each column its own name")


@pytest.mark.parametrize("line, message", [
    ('{"text": "fine", "label": "pos", "label": "neg"}', "t.jsonl:2: the object names 'label' "
     "twice"),
    ('{"text": "fine", "label": NaN}', "t.jsonl:2: NaN is not JSON"),
])
def test_a_json_line_with_a_key_twice_or_nan_is_refused(tmp_path, line, message):
  path = _write(tmp_path, "t.jsonl", '{"text": "a", "label": "pos"}\n' + line + "\n")
  _refused(path, message)


@pytest.mark.parametrize("quoted", [True, False])
def test_a_field_over_128_kib_reads(tmp_path, quoted, monkeypatch):
  """Before: `_csv.Error: field larger than field limit (131072)`. Where a C long has 32 bits,
  csv.field_size_limit(sys.maxsize) overflows: the limit then is 2**31 - 1."""
  limits, real_limit = [], csv.field_size_limit

  def field_size_limit_of_a_32_bit_long(*limit):
    if limit and limit[0] > 2**31 - 1:
      raise OverflowError("Python int too large to convert to C long")
    limits.extend(limit)
    return real_limit(*limit)
  monkeypatch.setattr(csv, "field_size_limit", field_size_limit_of_a_32_bit_long)
  long_text = "word, " * 40000 if quoted else "word " * 40000  # 240 KB, 200 KB
  field = f'"{long_text}"' if quoted else long_text
  examples, _ = _read(_write(tmp_path, "t.csv", f"text,label\n{field},pos\nshort,neg\n"))
  assert [len(e.text_a) for e in examples] == [len(long_text.strip()), 5]
  assert limits == [2**31 - 1]
  real_limit(131072)  # as the csv module starts: the next test sees no lifted limit


@pytest.mark.parametrize("content, message", [
    # Before, the open quote swallowed the rows after it as text.
    ('text,label\nfine,pos\n"never closed,pos\nok,neg\n', "t.csv:3: not CSV: unexpected end of "
     "data: enclose a field"),
    ('text,label\n"quoted"then,pos\n', "t.csv:2: not CSV: ',' expected after '\"'"),
])
def test_csv_errors_name_the_line_the_row_starts(tmp_path, content, message):
  _refused(_write(tmp_path, "t.csv", content), message)


def test_crlf_and_line_separators_inside_json_strings_read_as_written(tmp_path):
  # U+2028 and U+0085 may stand unescaped in a JSON string; splitlines() cut the line there.
  texts = ["one\u2028line", "next\x85line"]
  content = "".join(json.dumps({"text": t, "label": "x"}, ensure_ascii=False) + "\r\n"
                    for t in texts)
  examples, _ = _read(_write(tmp_path, "t.jsonl", content))
  assert [e.label for e in examples] == ["x", "x"] and len(examples) == 2


@pytest.mark.parametrize("row, message", [
    ({"text": ["a", "list"], "label": "x"}, "t.jsonl:2: column 'text' holds a JSON list, not a "
     "text"),
    ({"text": None, "label": "x"}, "t.jsonl:2: column 'text' is null"),
    ({"text": "fine", "label": None}, "t.jsonl:2: column 'label' is null"),
])
def test_json_texts_that_are_not_strings_and_nulls_are_refused(tmp_path, row, message):
  _refused(_jsonl(tmp_path, {"text": "a", "label": "x"}, row), message)


# ---- scores ----------------------------------------------------------------------------------
@pytest.mark.parametrize("label, message", [
    ("nan", "label 'nan' in column 'label' is not a finite number (--label_type=float)"),
    ("inf", "label 'inf' in column 'label' is not a finite number"),
    ("-Infinity", "label '-Infinity' in column 'label' is not a finite number"),
])
def test_a_score_that_is_not_finite_is_refused(tmp_path, label, message):
  path = _write(tmp_path, "t.csv", f"text,label\nfine,0.5\nbad,{label}\n")
  assert message in _refused(path, "t.csv:3: ", label_type="float")


def test_a_json_boolean_score_is_refused_and_numbers_read(tmp_path):
  path = _jsonl(tmp_path, {"text": "a", "label": 2.5}, {"text": "b", "label": "1"})
  assert [e.label for e in _read(path, label_type="float")[0]] == [2.5, 1.0]
  path = _jsonl(tmp_path, {"text": "a", "label": 2.5}, {"text": "b", "label": True})
  _refused(path, "t.jsonl:2: label True in column 'label' is not a number (--label_type=float)",
           label_type="float")


# ---- label names -----------------------------------------------------------------------------
@pytest.mark.parametrize("labels, message", [
    (["a", ""], "t.jsonl:2: label '' in column 'label': give a label name"),
    (["a", None], "t.jsonl:2: label None in column 'label': give a label name"),
    (["a", True], "t.jsonl:2: label True in column 'label': give a label name"),
])
def test_empty_or_null_names_in_a_label_list_are_refused(tmp_path, labels, message):
  # Before, they became the classes '' and 'None'.
  _refused(_jsonl(tmp_path, {"text": "a", "label": ["a"]}, {"text": "b", "label": labels}),
           message)


def test_a_blank_single_label_is_refused(tmp_path):
  _refused(_write(tmp_path, "t.csv", "text,label\nfine,pos\nbad,  \n"),
           "t.csv:3: label '  ' in column 'label': give a label name, a list of names")


@pytest.mark.parametrize("row, spec, message", [
    ({"text": "b", "label": ["a|b"]}, {"label_separator": "|"},
     "t.jsonl:2: label 'a|b' in column 'label' holds the label separator '|'"),
    ({"text": "b", "label": ["a,b"]}, {}, "t.jsonl:2: label 'a,b' in column 'label' holds a "
     "comma"),
    ({"text": "b", "label": "a,b"}, {}, "label 'a,b' in column 'label' holds a comma"),
    ({"text": "b", "label": "a\tb"}, {}, "label 'a\\tb' in column 'label' holds a tab"),
    ({"text": "b", "label": "a\nb"}, {}, "label 'a\\nb' in column 'label' holds a line break"),
])
def test_a_label_holding_what_outputs_join_names_with_is_refused(tmp_path, row, spec, message):
  first = {"text": "a", "label": ["a"] if isinstance(row["label"], list) else "a"}
  assert "rename the label" in _refused(_jsonl(tmp_path, first, row), message, **spec)


@pytest.mark.parametrize("label_list, message", [
    (("a", "b|c"), "--label_list: label 'b|c' holds the label separator '|'"),
    (("a", "b\tc"), "--label_list: label 'b\\tc' holds a tab"),
])
def test_a_label_list_name_holding_the_separator_is_refused(tmp_path, label_list, message):
  path = _write(tmp_path, "t.csv", "text,label\nfine,a\n")
  _refused(path, message, errors.UsageError, label_list=label_list, label_separator="|")


def test_one_number_written_two_ways_is_refused_naming_both_lines(tmp_path):
  # Before, JSON 1 and 1.0 were the classes '1' and '1.0'.
  path = _jsonl(tmp_path, {"text": "a", "label": 1}, {"text": "b", "label": 0},
                {"text": "c", "label": 1.0})
  message = _refused(path, "t.jsonl:3: label '1.0' is label '1' of ")
  assert f"{path}:1 written another way" in message, message
  path = _jsonl(tmp_path, {"text": "a", "label": ["1", "2"]}, {"text": "b", "label": [2.0]},
                name="multi.jsonl")
  _refused(path, "multi.jsonl:2: label '2.0' is label '2' of ")
  # Numbers that agree are one class (JSON 1 and "1" alike); strings may be codes: '1.1' and
  # '1.10' stay two labels.
  path = _jsonl(tmp_path, {"text": "a", "label": 1}, {"text": "b", "label": 0},
                {"text": "c", "label": "1"}, name="agree.jsonl")
  examples, names = _read(path)
  assert names == ["0", "1"] and [e.label for e in examples] == ["1", "0", "1"]
  examples, names = _read(_write(tmp_path, "codes.csv", "text,label\na,1.1\nb,1.10\n"))
  assert names == ["1.1", "1.10"]


# ---- settings and flags ----------------------------------------------------------------------
@pytest.mark.parametrize("kwargs, message", [
    ({"threshold": 1.5}, "--threshold=1.5: must be above 0 and below 1"),
    ({"threshold": float("nan")}, "--threshold=nan: must be above 0 and below 1"),
    ({"label_separator": "|", "label_type": "float"},
     "--label_separator=| with --label_type=float"),
    ({"label_column": "text"}, "--label_column=text is also --text_column"),
])
def test_settings_refuse_a_threshold_or_columns_that_cannot_work(kwargs, message):
  with pytest.raises(errors.UsageError) as raised:
    OwnDataSettings(output_dir="out", model=settings.ModelSettings(), train_file="t.csv",
                    do_train=True, **kwargs)
  assert message in str(raised.value)


@pytest.mark.parametrize("flag, message", [
    ("--threshold=1.5", "flag --threshold=1.5: must be above 0 and below 1"),
    ("--threshold=-1", "flag --threshold=-1.0: must be above 0 and below 1"),
    ("--threshold=nan", "flag --threshold=nan: must be above 0 and below 1"),
    ("--warmup_step=2000", "--warmup_step is more than --train_step"),
    ("--threshold_to_export=inf", "flag --threshold_to_export=inf: must be a finite number"),
])
def test_run_classifier_flags_out_of_range_are_one_usage_error_line(tmp_path, flag, message):
  train = _write(tmp_path, "train.csv", "text,label\nfine,pos\n")
  result = run_binary("run_classifier", [f"--train_file={train}", "--do_train",
                                         f"--output_dir={tmp_path / 'out'}", flag],
                      check=False, timeout=120)
  assert result.returncode == errors.USAGE_EXIT_CODE, result.stderr[-2000:]
  lines = [line for line in result.stderr.splitlines() if line.startswith("error:")]
  assert len(lines) == 1 and message in lines[0], result.stderr[-2000:]
  assert "Traceback" not in result.stderr
  assert not (tmp_path / "out").exists()


def test_a_multi_label_export_takes_threshold_to_export_when_given():
  from albert_tf.tasks.classifier.own_job import OwnDataJob

  def job(threshold_to_export):
    return types.SimpleNamespace(settings=types.SimpleNamespace(
        threshold=0.5, threshold_to_export=threshold_to_export))
  assert OwnDataJob.export_threshold(job(float("nan"))) == 0.5
  assert OwnDataJob.export_threshold(job(0.3)) == 0.3
  with pytest.raises(errors.UsageError, match=r"--threshold_to_export=1.5: a multi-label"):
    OwnDataJob.export_threshold(job(1.5))
