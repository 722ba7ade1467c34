"""Inputs at the edges end in a clear error naming the input, or in a correct result:
duplicate ids, HF export heads, configs from two sources, random heads in SavedModels, Beam's
stale temporaries, truncated safetensors."""

import json
import os

import pytest

from albert_tf.tasks.classifier import data as glue
from albert_tf.tasks.race import data as race
from albert_tf.tasks.squad import data as squad_data
from repo_paths import TESTDATA


# ---- duplicate ids ---------------------------------------------------------------------------
def _squad(tmp_path, ids_per_paragraph, name="dev.json"):
  """A SQuAD file: one article per list of paragraphs, each paragraph's questions with the ids
  given."""
  data = [{"title": "t", "paragraphs": [
      {"context": "The cat sat on the mat.",
       "qas": [{"id": i, "question": "Where?", "is_impossible": False,
                "answers": [{"text": "the mat", "answer_start": 15}]} for i in ids]}
      for ids in paragraphs]} for paragraphs in ids_per_paragraph]
  path = tmp_path / name
  path.write_text(json.dumps({"version": "v2.0", "data": data}))
  return str(path)


@pytest.mark.parametrize("ids, first, second", [
    ([[["a", "b", "a"]]], "article 0, paragraph 0, question 0",
     "article 0, paragraph 0, question 2"),
    ([[["a"], ["b"]], [["c", "b"]]], "article 0, paragraph 1, question 0",
     "article 1, paragraph 0, question 1"),
    ([[[7, "x"]], [["7"]]], "article 0, paragraph 0, question 0",
     "article 1, paragraph 0, question 0"),
])
@pytest.mark.parametrize("is_training", [True, False])
def test_duplicate_squad_question_ids_name_the_file_the_id_and_both_positions(
    tmp_path, ids, first, second, is_training):
  path = _squad(tmp_path, ids)
  with pytest.raises(ValueError) as error:
    squad_data.read_squad_examples(path, is_training)
  message = str(error.value)
  assert message.startswith(f"SQuAD file {path}: question id ")
  assert "used twice" in message and first in message and second in message


def test_unique_squad_ids_read_as_before(tmp_path):
  examples = squad_data.read_squad_examples(_squad(tmp_path, [[["a", "b"]], [["c"]]]), False)
  assert [e.qas_id for e in examples] == ["a", "b", "c"]


@pytest.mark.parametrize("task, split, text, rows", [
    ("mrpc", "test", "index\t#1 ID\t#2 ID\t#1 String\t#2 String\n"
                     "1\ta\tb\tx y\tz\n2\ta\tb\tx\tz\n1\ta\tb\tu\tv\n", (1, 3)),
    ("rte", "dev", "index\tsentence1\tsentence2\tlabel\n"
                   "0\ta\tb\tentailment\n5\tc\td\tentailment\n7\te\tf\tentailment\n"
                   "5\tg\th\tnot_entailment\n", (2, 4)),
    ("qqp", "train", "id\tqid1\tqid2\tq1\tq2\tis_duplicate\n"
                     "9\t1\t2\ta\tb\t0\nshort row\n9\t3\t4\tc\td\t1\n", (1, 3)),
])
def test_duplicate_glue_guids_name_the_file_the_guid_and_both_rows(tmp_path, task, split, text,
                                                                   rows):
  processor = glue.processor(task)
  directory = tmp_path / processor.spec.directory
  directory.mkdir()
  path = directory / processor.spec.files[split]
  path.write_text(text)
  with pytest.raises(ValueError) as error:
    processor.get_examples(str(tmp_path), split)
  message = str(error.value)
  assert message.startswith(f"{path}: guid ") and "used twice" in message
  assert f"row {rows[0]} (line {rows[0] + 1}) and row {rows[1]} (line {rows[1] + 1})" in message


def _article(article_id):
  return json.dumps({"id": article_id, "article": "The cat sat.", "answers": ["A"],
                     "questions": ["Who sat?"], "options": [["cat", "dog", "cow", "owl"]]})


@pytest.mark.parametrize("layout, where_first, where_second", [
    ({"high/1.txt": ["a", "b", "a"]}, "high/1.txt, line 1", "high/1.txt, line 3"),
    ({"middle/1.txt": ["m"], "high/2.txt": ["x", "m"]}, "middle/1.txt, line 1",
     "high/2.txt, line 2"),
    ({"high/1.txt": ["h"], "high/2.txt": ["h"]}, "high/1.txt, line 1", "high/2.txt, line 1"),
])
@pytest.mark.parametrize("split", ["train", "test"])
def test_duplicate_race_article_ids_name_the_files_lines_and_id(tmp_path, layout, where_first,
                                                                where_second, split):
  for level in ("middle", "high"):
    (tmp_path / "RACE" / split / level).mkdir(parents=True)
  for name, ids in layout.items():
    (tmp_path / "RACE" / split / name).write_text("\n".join(_article(i) for i in ids) + "\n")
  with pytest.raises(ValueError) as error:
    race.RaceProcessor().get_examples(str(tmp_path), split)
  message = str(error.value)
  base = tmp_path / "RACE" / split
  assert message.startswith(f"RACE file {base}/{where_second}: article id ")
  assert "used twice" in message and f"RACE file {base}/{where_first}" in message


# ---- configs from two sources ------------------------------------------------------------------
HF = os.path.join(TESTDATA, "hf_albert")


def _hf_dir(tmp_path, folder="encoder", **changes):
  """A copy of an HF fixture directory, its config.json changed."""
  out = tmp_path / f"hf_{folder}"
  out.mkdir()
  for name in os.listdir(os.path.join(HF, folder)):
    (out / name).write_bytes(open(os.path.join(HF, folder, name), "rb").read())
  values = json.loads((out / "config.json").read_text())
  values.update(changes)
  (out / "config.json").write_text(json.dumps(values))
  return str(out)


def _albert_config_file(tmp_path, **changes):
  from albert_tf.checkpoints import hf_config
  path = str(tmp_path / "albert_config.json")
  hf_config.from_hf_config(os.path.join(HF, "encoder")).replace(**changes).to_json_file(path)
  return path


def test_agreeing_configs_give_the_config_file(tmp_path):
  from albert_tf.checkpoints import hf
  config_file = _albert_config_file(tmp_path)
  config, source = hf.model_config(config_file, _hf_dir(tmp_path))
  assert source == config_file and config.hidden_size == 32 and config.hidden_act == "gelu"


@pytest.mark.parametrize("hf_changes, ours, field", [
    ({"hidden_act": "gelu"}, {}, "hidden_act"),  # HF's exact erf GELU is not the original's
    ({"hidden_act": "relu"}, {}, "hidden_act"),
    ({}, {"hidden_act": "relu"}, "hidden_act"),
    ({"layer_norm_eps": 1e-5}, {}, "layer_norm_eps"),
    ({"position_embedding_type": "relative_key"}, {}, "position_embedding_type"),
    ({}, {"hidden_size": 64, "intermediate_size": 64}, "hidden_size"),
    ({"vocab_size": 1200}, {}, "vocab_size"),
    ({}, {"num_hidden_layers": 4}, "num_hidden_layers"),
    ({}, {"embedding_size": 32}, "embedding_size"),
    ({"max_position_embeddings": 128}, {}, "max_position_embeddings"),
    ({"hidden_dropout_prob": 0.1}, {}, "hidden_dropout_prob"),
    ({}, {"type_vocab_size": 3}, "type_vocab_size"),
])
def test_configs_that_disagree_name_both_files_and_the_field(tmp_path, hf_changes, ours, field):
  from albert_tf.checkpoints import hf
  config_file, checkpoint = _albert_config_file(tmp_path, **ours), _hf_dir(tmp_path, **hf_changes)
  with pytest.raises(ValueError) as error:
    hf.model_config(config_file, checkpoint)
  message = str(error.value)
  assert f"--albert_config_file={config_file} and {checkpoint}/config.json" in message
  assert f"disagree on `{field}`" in message and "drop --albert_config_file" in message


@pytest.mark.slow
def test_export_saved_model_refuses_an_exact_gelu_hf_checkpoint_with_a_config_file(tmp_path):
  from helpers import run_binary
  checkpoint = _hf_dir(tmp_path, hidden_act="gelu")
  result = run_binary("export_saved_model", [
      f"--albert_config_file={_albert_config_file(tmp_path)}", f"--init_checkpoint={checkpoint}",
      f"--export_dir={tmp_path / 'export'}"], check=False)
  assert result.returncode != 0
  assert f"{checkpoint}/config.json" in result.stderr and "`hidden_act`" in result.stderr
  assert not (tmp_path / "export").exists()


# ---- safetensors ---------------------------------------------------------------------------------
@pytest.mark.parametrize("keep", [0, 7, 100, -50])
def test_a_truncated_safetensors_file_is_named(tmp_path, keep):
  import albert_tf
  from albert_tf.checkpoints import hf_config
  from albert_tf.models import AlbertModel
  checkpoint = _hf_dir(tmp_path)
  weights = os.path.join(checkpoint, "model.safetensors")
  data = open(weights, "rb").read()
  open(weights, "wb").write(data[:keep])
  model = AlbertModel(hf_config.from_hf_config(checkpoint))
  with pytest.raises(ValueError, match=f"weights file {weights} .*truncated or corrupt"):
    albert_tf.load_checkpoint(model, checkpoint)


# ---- SavedModel heads ----------------------------------------------------------------------------
@pytest.mark.parametrize("folder, left_out", [
    ("pretraining", []), ("encoder", ["mlm", "sop_log_probs"]),
    ("classifier", ["mlm", "sop_log_probs"]), ("qa", ["mlm", "sop_log_probs"])])
def test_heads_missing_names_the_signatures_without_checkpoint_weights(folder, left_out):
  import albert_tf
  from albert_tf.checkpoints import hf_config
  from albert_tf.export.saved_model import heads_missing
  model = albert_tf.AlbertPretrainer(hf_config.from_hf_config(os.path.join(HF, "pretraining")))
  missing = heads_missing(albert_tf.load_checkpoint(model, os.path.join(HF, folder)))
  assert sorted(missing) == left_out
  assert all(n.startswith("cls/predictions/") for n in missing.get("mlm", []))
  sop = missing.get("sop_log_probs", ["cls/seq_relationship/output_weights"])
  assert "cls/seq_relationship/output_weights" in sop


def test_a_partial_head_is_missing_too():
  from albert_tf.checkpoints import LoadReport
  from albert_tf.export.saved_model import heads_missing
  report = LoadReport("ckpt", ["cls/predictions/transform/dense/kernel"],
                      ["cls/predictions/output_bias"], [])
  assert heads_missing(report) == {"mlm": ["cls/predictions/output_bias"]}


def test_serving_module_holds_only_the_head_signatures_asked_for():
  import albert_tf
  from albert_tf.core.settings import TokenizerSettings
  from albert_tf.export.saved_model import ServingModule
  model = albert_tf.AlbertPretrainer(_hf_config())
  spm = TokenizerSettings(spm_model_file=os.path.join(HF, "encoder", "spiece.model"))
  assert {"mlm", "sop_log_probs"} <= set(ServingModule(model, spm, max_seq_length=16).signatures())
  signatures = set(ServingModule(model, spm, max_seq_length=16,
                                 head_signatures=["sop_log_probs"]).signatures())
  assert "mlm" not in signatures and {"sop_log_probs", "tokens", "serving_default"} <= signatures


# ---- Beam's stale temporaries --------------------------------------------------------------------
def _dead_pid():
  import subprocess
  import sys
  process = subprocess.Popen([sys.executable, "-c", "pass"])
  process.wait()
  return process.pid


def test_beam_launch_removes_temporaries_of_dead_local_writers(tmp_path):
  pytest.importorskip("apache_beam")
  from albert_tf.data import beam_generation
  out = tmp_path / "out"
  out.mkdir()
  dead, alive = _dead_pid(), os.getppid()
  stale = [out / f".a.txt.tfrecord.tmp-{dead}", out / f".b.txt.tfrecord.tmp-{os.getpid()}"]
  kept = [out / f".a.txt.tfrecord.tmp-{alive}", out / f".other.tfrecord.tmp-{dead}",
          out / ".a.txt.tfrecord.tmp-notapid", out / "a.txt.tfrecord"]
  for path in stale + kept:
    path.write_bytes(b"")
  logged = []
  removed = beam_generation.remove_stale_temps(
      [str(out / "a.txt.tfrecord"), str(out / "b.txt.tfrecord"), str(tmp_path / "none" / "c")],
      log=logged.append)
  assert sorted(removed) == sorted(str(p) for p in stale)
  assert sorted(os.listdir(out)) == sorted(p.name for p in kept)
  assert any(f"removed {stale[0]}, the temporary of a killed run: its writer (pid {dead}) runs "
             "no more" in line for line in logged)
  assert any(f"kept {kept[0]}: it may be a running job's" in line for line in logged)


def test_beam_launch_removes_old_remote_temporaries_by_age(tmp_path, monkeypatch):
  pytest.importorskip("apache_beam")
  from albert_tf.data import beam_generation
  # Local files standing in for an object store's: the pid rule does not apply there.
  monkeypatch.setattr(beam_generation, "_writer_pids_visible", lambda path: False)
  old, young = tmp_path / ".a.tfrecord.tmp-1", tmp_path / ".a.tfrecord.tmp-2"
  for path in (old, young):
    path.write_bytes(b"")
  hours_ago = beam_generation.STALE_TEMP_HOURS + 1
  os.utime(old, (os.path.getmtime(old) - hours_ago * 3600,) * 2)
  logged = []
  assert beam_generation.remove_stale_temps([str(tmp_path / "a.tfrecord")],
                                            log=logged.append) == [str(old)]
  assert os.listdir(tmp_path) == [young.name]
  assert any("last written" in line and f"over {beam_generation.STALE_TEMP_HOURS:g}" in line
             for line in logged)
  assert beam_generation.remove_stale_temps([str(tmp_path / "a.tfrecord")], max_age_hours=0,
                                            log=logged.append) == [str(young)]


# ---- --format=hf writes the checkpoint's head, or refuses -------------------------------------
def _hf_config():
  from albert_tf.checkpoints import hf_config
  return hf_config.from_hf_config(os.path.join(HF, "encoder"))


def _saved(model, directory, layout):
  """`model` saved in the released layout (model.ckpt-best) or ours, under `directory`."""
  import albert_tf
  import tensorflow as tf
  os.makedirs(directory, exist_ok=True)
  if layout == "released":
    return albert_tf.save_original_checkpoint(model, os.path.join(directory, "model.ckpt-best"))
  return tf.train.Checkpoint(**albert_tf.checkpoints.model_parts(model)).write(
      os.path.join(directory, "ckpt-1"))


def _written(out):
  import safetensors.numpy
  config = json.loads(open(os.path.join(out, "config.json")).read())
  keys = safetensors.numpy.load_file(os.path.join(out, "model.safetensors"))
  return config, {k: v.shape for k, v in keys.items() if not k.startswith("albert.")}


@pytest.mark.parametrize("layout", ["released", "ours"])
def test_squad_v2_checkpoints_are_refused_saying_what_to_do(tmp_path, layout):
  import albert_tf
  from albert_tf.export.hf import export_hf_layout
  checkpoint = _saved(albert_tf.AlbertSquadV2(_hf_config()), str(tmp_path / "run"), layout)
  with pytest.raises(ValueError, match=f"{checkpoint} holds a SQuAD 2.0 head .*no class for: "
                                       "export its encoder alone with --head=none"):
    export_hf_layout(_hf_config(), checkpoint, str(tmp_path / "hf"))
  assert not (tmp_path / "hf").exists()
  out = export_hf_layout(_hf_config(), checkpoint, str(tmp_path / "hf"), head="none")
  config, keys = _written(out)
  assert config["architectures"] == ["AlbertModel"] and "pooler.weight" in keys


@pytest.mark.parametrize("layout", ["released", "ours"])
@pytest.mark.parametrize("evidence, head", [
    ("race_train.tf_record", "auto"), ("predict_results.txt", "auto"), (None, "multiple_choice")])
def test_race_checkpoints_become_albert_for_multiple_choice(tmp_path, layout, evidence, head):
  import albert_tf
  from albert_tf.checkpoints import hf_config
  from albert_tf.export.hf import export_hf_layout
  config = _hf_config().replace(num_labels=3)  # a config's labels are not choices
  checkpoint = _saved(albert_tf.AlbertMultipleChoice(config), str(tmp_path / "run"), layout)
  if evidence:
    (tmp_path / "run" / evidence).write_text("")
  out = export_hf_layout(config, checkpoint, str(tmp_path / "hf"), head=head)
  written, keys = _written(out)
  assert written["architectures"] == ["AlbertForMultipleChoice"]
  assert "id2label" not in written and "label2id" not in written
  assert keys == {"classifier.weight": (1, 32), "classifier.bias": (1,)}
  again = albert_tf.AlbertMultipleChoice(hf_config.from_hf_config(out))
  assert not albert_tf.load_checkpoint(again, out).missing


@pytest.mark.parametrize("evidence, head", [
    ({"eval_results.txt": "pearson = 0.5\n"}, "auto"), ({"submit_results.tsv": ""}, "auto"),
    ({}, "classifier")])
def test_a_one_label_classifier_stays_a_sequence_classifier(tmp_path, evidence, head):
  import albert_tf
  from albert_tf.export.hf import export_hf_layout
  checkpoint = _saved(albert_tf.AlbertClassifier(_hf_config(), num_labels=1),
                      str(tmp_path / "run"), "released")
  for name, text in evidence.items():
    (tmp_path / "run" / name).write_text(text)
  written, keys = _written(export_hf_layout(_hf_config(), checkpoint, str(tmp_path / "hf"),
                                            head=head))
  assert written["architectures"] == ["AlbertForSequenceClassification"]
  assert written["id2label"] == {"0": "LABEL_0"} and keys["classifier.weight"] == (1, 32)


def test_a_one_logit_head_without_evidence_asks_which(tmp_path):
  import albert_tf
  from albert_tf.export.hf import export_hf_layout
  checkpoint = _saved(albert_tf.AlbertMultipleChoice(_hf_config()), str(tmp_path / "run"),
                      "released")
  with pytest.raises(ValueError, match=f"{checkpoint} has output_weights \\[1, H\\].*give "
                                       "--head=multiple_choice .* or --head=classifier"):
    export_hf_layout(_hf_config(), checkpoint, str(tmp_path / "hf"))
  assert not (tmp_path / "hf").exists()


@pytest.mark.parametrize("folder, head, architecture", [
    ("classifier", "auto", "AlbertForSequenceClassification"),
    ("qa", "auto", "AlbertForQuestionAnswering"), ("pretraining", "auto", "AlbertForPreTraining"),
    ("encoder", "auto", "AlbertModel"), ("pretraining", "none", "AlbertModel")])
def test_hf_checkpoints_keep_their_head(tmp_path, folder, head, architecture):
  from albert_tf.checkpoints import hf_config
  from albert_tf.export.hf import export_hf_layout
  out = export_hf_layout(hf_config.from_hf_config(os.path.join(HF, folder)),
                         os.path.join(HF, folder), str(tmp_path / "hf"), head=head)
  assert _written(out)[0]["architectures"] == [architecture]


@pytest.mark.parametrize("folder, head", [("encoder", "pretraining"), ("pretraining", "classifier"),
                                          ("classifier", "squad_v1"), ("qa", "none")])
def test_a_head_the_checkpoint_lacks_is_refused(tmp_path, folder, head):
  from albert_tf.export.hf import export_hf_layout
  checkpoint = os.path.join(HF, folder)
  with pytest.raises(ValueError, match=f"{checkpoint} has no"):
    export_hf_layout(_hf_config(), checkpoint, str(tmp_path / "hf"), head=head)
  assert not (tmp_path / "hf").exists()


def test_an_unknown_head_is_refused(tmp_path):
  import albert_tf
  import numpy as np
  from albert_tf.export.hf import export_hf_layout
  from helpers import (read_tf1_checkpoint,
                       write_tf1_checkpoint)
  prefix = albert_tf.save_original_checkpoint(albert_tf.AlbertPretrainer(_hf_config()),
                                              str(tmp_path / "a" / "model.ckpt-1"))
  tensors = read_tf1_checkpoint(prefix)
  tensors["token_tagging/output_weights"] = np.zeros([9, 32], np.float32)
  other = write_tf1_checkpoint(str(tmp_path / "b" / "model.ckpt-1"), tensors)
  with pytest.raises(ValueError, match="head no transformers class is known for "
                                       r"\(token_tagging/output_weights\).*--head=none"):
    export_hf_layout(_hf_config(), other, str(tmp_path / "hf"))


@pytest.mark.slow
def test_export_checkpoints_refuses_a_squad_v2_checkpoint(tmp_path):
  import albert_tf
  from helpers import run_binary
  checkpoint = _saved(albert_tf.AlbertSquadV2(_hf_config()), str(tmp_path / "run"), "released")
  config_file = str(tmp_path / "albert_config.json")
  _hf_config().to_json_file(config_file)
  flags = [f"--albert_config_file={config_file}", f"--init_checkpoint={checkpoint}",
           "--format=hf", f"--export_path={tmp_path / 'hf'}"]
  result = run_binary("export_checkpoints", flags, check=False)
  assert result.returncode != 0 and "--head=none" in result.stderr
  assert "holds a SQuAD 2.0 head" in result.stderr and not (tmp_path / "hf").exists()
