"""Keras-native models: registered and serialisable (a `.keras` file reloads in a fresh process
with identical outputs), summary() and symbolic calls with output shapes, task models on a
shared encoder, and each model's own original-layout map."""

import importlib
import subprocess
import sys
import textwrap

import keras
import numpy as np
import pytest
import tensorflow as tf

import albert_tf
from albert_tf.checkpoints import layout
from helpers import REPO_ROOT

TINY = dict(vocab_size=100, embedding_size=8, hidden_size=16, num_hidden_layers=2,
            num_attention_heads=2, intermediate_size=32, max_position_embeddings=16)
B, C, T = 2, 3, 7

# name -> (keyword arguments beyond config / encoder, the model's head outputs' shapes at B, T).
TASKS = {
    "AlbertPretrainer": ({}, {"masked_lm_logits": (B, 2, 100), "sentence_order_logits": (B, 2)}),
    "AlbertClassifier": ({"num_labels": 3}, {"logits": (B, 3)}),
    "AlbertSpanLabeler": ({}, {"start_logits": (B, T), "end_logits": (B, T)}),
    "AlbertSquadV2": ({"start_n_top": 2, "end_n_top": 3},
                      {"start_top_index": (B, 2), "end_top_index": (B, 6), "cls_logits": (B,)}),
    "AlbertMultipleChoice": ({"num_choices": C}, {"logits": (B, C)}),
}
MODELS = ["AlbertModel"] + sorted(TASKS)


def _config(**changes):
  return albert_tf.AlbertConfig(**dict(TINY, **changes))


def _model(name, config=None, encoder=None):
  cls = getattr(albert_tf, name)
  if name == "AlbertModel":
    return cls(config)
  return cls(config, encoder=encoder, **TASKS[name][0])


def _inputs(name, seed=0):
  rng = np.random.default_rng(seed)
  shape = (B, C, T) if name == "AlbertMultipleChoice" else (B, T)
  ids = rng.integers(1, 100, shape).astype(np.int32)
  mask = np.ones_like(ids)
  mask[1, ..., 5:] = 0
  inputs = {"input_ids": ids, "input_mask": mask, "segment_ids": (ids % 2).astype(np.int32)}
  if name == "AlbertPretrainer":
    inputs["masked_lm_positions"] = np.array([[1, 3], [2, 0]], np.int32)
  if name == "AlbertSquadV2":
    inputs["p_mask"] = (np.arange(T) >= 5).astype(np.int32)[np.newaxis].repeat(B, 0)
  return inputs


def _flat(outputs):
  """{key: array}, `encoder_outputs` as encoder_outputs/0, /1, ..."""
  flat = {}
  for key, value in outputs.items():
    if isinstance(value, list):
      flat.update({f"{key}/{i}": np.asarray(v) for i, v in enumerate(value)})
    else:
      flat[key] = np.asarray(value)
  return flat


def _randomize(model, seed=1):
  """Gives every weight (biases and LayerNorm too) values no fresh model would have."""
  rng = np.random.default_rng(seed)
  for v in model.weights:
    v.assign(rng.normal(0, 0.2, v.shape).astype(np.float32))


# -- registered and serialisable ------------------------------------------------------------------
@pytest.mark.parametrize("name", MODELS)
def test_config_round_trips(name):
  model = _model(name, _config(num_hidden_groups=2, hidden_act="relu"))
  serialized = keras.saving.serialize_keras_object(model)
  assert serialized["registered_name"] == f"albert_tf>{name}"
  for clone in (keras.saving.deserialize_keras_object(serialized),
                type(model).from_config(model.get_config())):
    assert type(clone) is type(model)
    assert clone.get_config() == model.get_config()
    assert clone.config == model.config and clone.name == model.name
    assert [v.shape for v in clone.weights] == [v.shape for v in model.weights]


@pytest.mark.slow
def test_save_and_load_in_a_fresh_process_gives_identical_outputs(tmp_path):
  config = _config(num_hidden_groups=2, inner_group_num=2, num_hidden_layers=3)
  expected = {}
  for name in MODELS:
    model = _model(name, config)
    _randomize(model)
    model.save(str(tmp_path / f"{name}.keras"))
    np.savez(tmp_path / f"{name}_inputs.npz", **_inputs(name))
    expected[name] = _flat(model(_inputs(name)))

  # Only `import albert_tf` before loading, and before Keras is even imported.
  script = textwrap.dedent("""
      import sys
      import albert_tf
      import numpy as np
      import keras

      directory, names = sys.argv[1], sys.argv[2:]
      for name in names:
        model = keras.models.load_model(f"{directory}/{name}.keras")
        assert type(model).__name__ == name, type(model)
        inputs = dict(np.load(f"{directory}/{name}_inputs.npz"))
        outputs = {}
        for key, value in model(inputs).items():
          values = value if isinstance(value, list) else [value]
          for i, v in enumerate(values):
            outputs[f"{key}/{i}" if isinstance(value, list) else key] = np.asarray(v)
        np.savez(f"{directory}/{name}_loaded.npz", **outputs)
      """)
  result = subprocess.run([sys.executable, "-c", script, str(tmp_path)] + MODELS, cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=300)
  assert result.returncode == 0, result.stderr[-3000:]
  for name in MODELS:
    loaded = dict(np.load(tmp_path / f"{name}_loaded.npz"))
    assert sorted(loaded) == sorted(expected[name]), name
    for key, value in expected[name].items():
      np.testing.assert_array_equal(loaded[key], value, err_msg=f"{name} {key}")


@pytest.mark.parametrize("name", ["AlbertModel", "AlbertSquadV2"])
def test_saved_model_export_is_unchanged_by_recorded_shapes(name, tmp_path):
  # The shapes build() records would otherwise make tf.saved_model.save trace a float32 default
  # signature of every model it meets, which fails on int token ids.
  model = _model(name, _config())
  inputs = _inputs(name)
  specs = {k: tf.TensorSpec([None, None], tf.int32, name=k) for k in inputs}

  class Serving(tf.Module):

    def __init__(self):
      super().__init__()
      self.model = model

    @tf.function(input_signature=[specs])
    def serve(self, features):
      return {"pooled_output": self.model(features)["pooled_output"]}

  module = Serving()
  tf.saved_model.save(module, str(tmp_path / "served"), signatures={"serve": module.serve})
  tf.saved_model.save(model, str(tmp_path / "root"))
  loaded = tf.saved_model.load(str(tmp_path / "served")).signatures["serve"]
  # Two graphs (the SavedModel's, optimised by Grappler, and eager ops): oneDNN may pick other
  # kernels / summation orders per CPU (1.5e-8 apart on AMX and Zen 4); pooled_output is a tanh,
  # |x| <= 1, so 1e-6 is float32 reassociation noise, far below any real difference.
  np.testing.assert_allclose(loaded(**{k: tf.constant(v) for k, v in inputs.items()})[
      "pooled_output"], model(inputs)["pooled_output"], rtol=0, atol=1e-6)


# -- output shapes: summary(), compute_output_shape, symbolic calls -------------------------------
@pytest.mark.parametrize("name", MODELS)
def test_summary_shows_output_shapes(name):
  model = _model(name, _config())
  lines = []
  model.summary(print_fn=lambda line, **_: lines.append(line), expand_nested=True)
  text = "\n".join(lines)
  assert "?" not in text, text
  for shape in ("(None, None, 8)", "(None, 16)"):  # the embeddings' and pooler's rows
    assert shape in text, text
  head_shapes = {"AlbertPretrainer": ["(None, None, 100)", "(None, 2)"],
                 "AlbertClassifier": ["(None, 3)"], "AlbertMultipleChoice": ["(None, 1)"],
                 "AlbertSpanLabeler": ["((None, None), (None,"]}
  for shape in head_shapes.get(name, []):
    assert shape in text, text


@pytest.mark.parametrize("name", MODELS)
def test_compute_output_shape_is_the_shape_of_the_outputs(name):
  model = _model(name, _config())
  inputs = _inputs(name)
  outputs = model(inputs)
  shapes = model.compute_output_shape({k: v.shape for k, v in inputs.items()})
  actual = {k: [tuple(t.shape) for t in v] if isinstance(v, list) else tuple(v.shape)
            for k, v in outputs.items()}
  if name == "AlbertMultipleChoice":
    assert shapes["sequence_output"] == (B * C, T, 16)
  assert keras.tree.map_shape_structure(tuple, shapes) == actual
  for key, shape in TASKS.get(name, ({}, {}))[1].items():
    assert actual[key] == shape, key


def test_symbolic_inputs_and_a_functional_model_on_the_encoder():
  encoder = albert_tf.AlbertModel(_config())
  inputs = {k: keras.Input((None,), dtype="int32", name=k)
            for k in ("input_ids", "input_mask", "segment_ids")}
  outputs = encoder(inputs)
  assert tuple(outputs["sequence_output"].shape) == (None, None, 16)
  assert [tuple(t.shape) for t in outputs["encoder_outputs"]] == [(None, None, 16)] * 2
  functional = keras.Model(inputs, keras.layers.Dense(3)(outputs["pooled_output"]))
  data = {k: v for k, v in _inputs("AlbertModel").items()}
  head = functional.layers[-1]
  want = encoder(data)["pooled_output"].numpy() @ head.kernel.numpy() + head.bias.numpy()
  np.testing.assert_allclose(functional.predict(data, verbose=0), want, atol=1e-6)

  squad = albert_tf.AlbertSquadV2(_config(), start_n_top=2, end_n_top=3)
  spec = squad({"input_ids": keras.Input((T,), dtype="int32"),
                "p_mask": keras.Input((T,), dtype="int32")})
  assert spec["end_top_index"].dtype == "int32" and tuple(spec["end_top_index"].shape) == (None, 6)
  spec = squad({"input_ids": keras.Input((T,), dtype="int32"),
                "p_mask": keras.Input((T,), dtype="int32"),
                "start_positions": keras.Input((), dtype="int32")}, training=True)
  assert tuple(spec["end_log_probs"].shape) == (None, T) and "end_top_index" not in spec


# -- task models on a shared encoder --------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(TASKS))
def test_task_on_a_given_encoder_shares_its_variables(name):
  encoder = albert_tf.AlbertModel(_config())
  task = _model(name, encoder=encoder)
  assert task.encoder is encoder and task.config is encoder.config
  task_ids = {id(v) for v in task.trainable_variables}
  assert all(id(v) in task_ids for v in encoder.trainable_variables)
  task_names = task.original_variables()
  for key, variable in encoder.original_variables().items():
    assert task_names[key] is variable, key

  _randomize(encoder)  # through the encoder: the task sees the new values
  inputs = _inputs(name)
  flat = {k: v.reshape(-1, T) for k, v in inputs.items() if k in ("input_ids", "input_mask",
                                                                  "segment_ids")}
  ours, theirs = _flat(task(inputs)), _flat(encoder(flat))
  for key, value in theirs.items():
    np.testing.assert_array_equal(ours[key], value, err_msg=key)

  # The same model as one made from the config with the encoder's weights.
  alone = _model(name, encoder.config)
  for a, b in zip(alone.weights, task.weights):
    a.assign(b)
  for key, value in _flat(alone(inputs)).items():
    np.testing.assert_array_equal(ours[key], value, err_msg=key)
  # The matching config may be given too; the config still round-trips.
  assert _model(name, encoder.config.replace(), encoder=encoder).encoder is encoder
  assert type(task).from_config(task.get_config()).config == encoder.config


def test_classifier_fine_tunes_a_pretrainers_encoder():
  pretrainer = albert_tf.AlbertPretrainer(_config())
  classifier = albert_tf.AlbertClassifier(num_labels=2, encoder=pretrainer.encoder)
  inputs = _inputs("AlbertClassifier")
  before = classifier(inputs)["pooled_output"].numpy()
  pretrainer.encoder.pooler.dense.bias.assign_add(tf.ones([16]))
  after = classifier(inputs)["pooled_output"].numpy()
  assert np.abs(after - before).max() > 1e-3
  np.testing.assert_array_equal(after, pretrainer(dict(
      inputs, masked_lm_positions=np.zeros((B, 1), np.int32)))["pooled_output"])


def test_task_arguments_are_checked():
  encoder = albert_tf.AlbertModel(_config())
  with pytest.raises(ValueError, match="give `config`"):
    albert_tf.AlbertPretrainer()
  with pytest.raises(ValueError, match=r"`config` differs from `encoder.config`"):
    albert_tf.AlbertSpanLabeler(_config(num_hidden_layers=3), encoder=encoder)
  with pytest.raises(TypeError, match="`encoder` must be an albert_tf.AlbertModel"):
    albert_tf.AlbertClassifier(num_labels=2, encoder=albert_tf.AlbertPretrainer(_config()))
  with pytest.raises(ValueError, match="num_labels must be an int >= 1"):
    albert_tf.AlbertClassifier(encoder=encoder)


# -- each model's original-layout map -------------------------------------------------------------
@pytest.mark.parametrize("name", MODELS)
def test_each_model_names_all_its_variables(name):
  model = _model(name, _config(num_hidden_groups=2))
  names = model.original_variables()
  assert layout.original_variable_map(model) == names
  assert len({id(v) for v in names.values()}) == len(names)
  assert {id(v) for v in names.values()} == {id(v) for v in model.trainable_variables}
  parts = model.checkpoint_parts()
  assert layout.model_parts(model) == parts and parts["encoder"] is getattr(model, "encoder",
                                                                             model)
  encoder = parts["encoder"]
  assert layout.encoder_variables(encoder) == encoder.original_variables()
  assert {n for n in names if n.startswith("bert/")} == set(encoder.original_variables())


def test_a_model_without_a_layout_is_refused():
  with pytest.raises(TypeError, match="no checkpoint layout is known for Sequential"):
    layout.original_variable_map(keras.Sequential())


def test_every_registered_class_has_a_stand_in_before_the_models_are_imported():
  import keras
  from albert_tf import registry
  for module in set(registry.keras_classes().values()):
    importlib.import_module(module)
  registered = sorted(name.split(">", 1)[1] for name, value in
                      keras.saving.get_custom_objects().items()
                      if name.startswith("albert_tf>") and isinstance(value, type))
  assert registered == sorted(registry.REGISTERED)


def test_import_albert_tf_loads_no_tensorflow_until_keras_is_used():
  script = ("import sys, albert_tf, albert_tf.data.pretraining_data; "
            "assert 'tensorflow' not in sys.modules and 'keras' not in sys.modules")
  result = subprocess.run([sys.executable, "-c", script], cwd=REPO_ROOT, capture_output=True,
                          text=True, timeout=120)
  assert result.returncode == 0, result.stderr[-2000:]
