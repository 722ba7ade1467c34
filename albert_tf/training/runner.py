"""The training loop shared by pretraining and fine-tuning: strategy.run inside tf.function,
iterations_per_loop steps per call, gradient accumulation, loss scaling, global-norm clipping,
checkpoints (saved through training.checkpointing, which also resumes them), summaries.

What is trained is given by an *objective* (see `Objective`): the runner only knows that a loss is
a sum of per-replica sums divided by global totals, so that an update equals the original's
single-device update on the same global batch however it is split over replicas and
micro-batches.
"""

import dataclasses
import logging
import math
import re
import time
from typing import Optional

import tensorflow as tf

from albert_tf.core import errors
from albert_tf.checkpoints.layout import model_parts, original_variable_map
from albert_tf.layers.transformer import set_recompute_activations
from albert_tf.optimization import clip_by_global_norm, densify, learning_rate_at
from albert_tf.training import fast_path
from albert_tf.training import preemption
from albert_tf.training import strategy as strategies
from albert_tf.training import summaries

logger = logging.getLogger("albert_tf")

SUM = tf.distribute.ReduceOp.SUM


class Objective:
  """What a runner trains. Subclasses define:

  totals(features): {name: float32 scalar} of one replica's batch (e.g. its example count); the
    runner sums them over replicas and hands the global values to `loss`.
  sums(outputs, features): {name: float32 scalar} per-replica sums behind the loss and metrics;
    summed over micro-batches and replicas.
  loss(sums, totals): this replica's share of the global loss.
  metrics(sums): {name: float} from globally summed `sums` (for logs and summaries).
  eval_metrics(sums): the same for `Runner.evaluate`; `metrics` unless an objective reports more
    in evaluation than it trains.
  """

  def totals(self, features):
    raise NotImplementedError

  def sums(self, outputs, features):
    raise NotImplementedError

  def loss(self, sums, totals):
    raise NotImplementedError

  def metrics(self, sums):
    raise NotImplementedError

  def eval_metrics(self, sums):
    return self.metrics(sums)


def build_optimizer_for(model, optimizer):
  """Creates the optimizer's slots for the model's trainable variables, naming each variable by
  its original TF1 name so that the decay / adaptation exclusions match the original's."""
  names = {id(v): n for n, v in original_variable_map(model).items()}
  optimizer.build(model.trainable_variables, names)
  return optimizer


class NonFiniteLossError(errors.AlbertError, RuntimeError):
  """A loss that became NaN or inf: the run stops unsaved (the fix is a lower learning rate or
  another precision, from a checkpoint saved before), reported as one line."""


class Runner:
  """Owns the model, optimizer, objective, step counter and the compiled step functions.

  Args:
    strategy: the tf.distribute strategy the model and optimizer were created under.
    model: the keras.Model to train.
    optimizer: a Lamb or AdamWeightDecay (albert_tf.optimization).
    settings: a TrainSettings (schedule, accumulation, clipping, jit_compile: XLA unless the
      device's fast path is without it, see albert_tf.training.fast_path; `jit_compile` here
      is what the steps are compiled with).
    objective: an Objective (what is trained; see above).
    loss_scale: a DynamicLossScale for mixed_float16, else None.

  Example: run_pretraining's update, four times (see tests/end_to_end/test_run_pretraining.py):

    runner = Runner(strategy, model, Lamb(), TrainSettings(...), PretrainingObjective())
    values = runner.train_steps(iterator, 4)   # {"loss": ..., "learning_rate": ..., sums}
  """

  def __init__(self, strategy, model, optimizer, settings, objective, loss_scale=None):
    self.strategy = strategy
    self.model = model
    self.optimizer = optimizer
    self.settings = settings
    self.objective = objective
    self.loss_scale = loss_scale
    # Before the steps are traced: what their backward pass recomputes is fixed then.
    set_recompute_activations(model, settings.recompute_activations)
    with strategy.scope():
      self.global_step = tf.Variable(0, dtype=tf.int64, trainable=False,
                                     aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA)
      build_optimizer_for(model, optimizer)
    # Set by a PreemptionWatcher's thread while a call runs; a plain variable of this process.
    self.stop_requested = tf.Variable(False, trainable=False, name="stop_requested")
    # Training records consumed (global), checkpointed: a resume knows where the data stands.
    self.records_consumed = tf.Variable(0, dtype=tf.int64, trainable=False,
                                        name="records_consumed")
    # XLA as settings.jit_compile asks, unless it is the slower path for the device.
    self.jit_compile = fast_path.jit_compile_for(model, strategy, settings.jit_compile,
                                                 settings.jit_compile_fast_path)
    # reduce_retracing: batches trimmed to their longest sequence come in several lengths.
    # autograph=False: the step's control flow is Python's, fixed while tracing, and the loops'
    # is written as tf.while_loop; autograph's conversion of the step, the objective and the
    # optimizer cost seconds of CPU in every training process (docs/speed.md, Start-up).
    self._micro_grads = tf.function(self._micro_grads_impl, jit_compile=self.jit_compile,
                                    reduce_retracing=True, autograph=False)
    self._fused_step = tf.function(lambda features: self._step_body(features, distributed=False),
                                   jit_compile=self.jit_compile, reduce_retracing=True,
                                   autograph=False)
    self._train_loop = tf.function(self._train_loop_impl, autograph=False)
    self._eval_loop = tf.function(self._eval_loop_impl, autograph=False)

  # -- training ---------------------------------------------------------------------------------
  def _micro_grads_impl(self, features, totals):
    variables = self.model.trainable_variables
    with tf.GradientTape() as tape:
      outputs = self.model(features, training=True)
      sums = self.objective.sums(outputs, features)
      loss = self.objective.loss(sums, totals)
      scaled = loss * self.loss_scale.scale if self.loss_scale is not None else loss
    grads = tape.gradient(scaled, variables)
    grads = [g if g is not None else tf.zeros(v.shape, tf.float32)
             for g, v in zip(grads, variables)]
    grads, sparse_sq = densify(grads)
    sums = dict(sums, loss=loss)
    # Which gradients come as slices is fixed by the graph; noted while tracing. Their square
    # sums add up over micro-batches and replicas like the gradients.
    self._sparse_flags = [sq is not None for sq in sparse_sq]
    sums["sparse_sq"] = tf.stack([sq if sq is not None else tf.constant(0.0)
                                  for sq in sparse_sq])
    return grads, sums

  def _replica_step(self, features):
    if self.strategy.num_replicas_in_sync == 1:
      return self._fused_step(features)
    return self._step_body(features, distributed=True)

  def _step_body(self, features, distributed):
    """One update. Distributed: gradients are all-reduced and the optimizer updates every copy
    (outside XLA, which compiles the forward/backward only). Single replica: the whole step,
    optimizer included, is one function (XLA-compiled with jit_compile)."""
    ctx = tf.distribute.get_replica_context()
    reduce = (lambda v: ctx.all_reduce(SUM, v)) if distributed else (lambda v: v)
    micro_grads = self._micro_grads if distributed else self._micro_grads_impl
    k = self.settings.gradient_accumulation_steps
    totals = reduce(self.objective.totals(features))
    variables = self.model.trainable_variables
    if k == 1:
      grads, sums = micro_grads(features, totals)
    else:
      micro = {name: tf.reshape(v, tf.concat([[k, -1], tf.shape(v)[1:]], 0))
               for name, v in features.items()}
      grads = [tf.zeros(v.shape, tf.float32) for v in variables]
      sums = None
      for i in range(k):
        g, s = micro_grads({n: v[i] for n, v in micro.items()}, totals)
        grads = [a + b for a, b in zip(grads, g)]
        sums = s if sums is None else {n: sums[n] + s[n] for n in s}
    grads = reduce(grads)
    sparse_sq = reduce(sums.pop("sparse_sq"))
    if self.loss_scale is not None:
      scale = self.loss_scale.scale
      grads = [g / scale for g in grads]
      finite = tf.reduce_all([tf.reduce_all(tf.math.is_finite(g)) for g in grads])
      self.loss_scale.update(finite)
      grads = [tf.where(finite, g, tf.zeros_like(g)) for g in grads]
      lr_gate = tf.cast(finite, tf.float32)
      sparse_sq = sparse_sq / tf.square(scale)
    else:
      lr_gate = 1.0
    grads = clip_by_global_norm(grads, self.settings.clip_norm,
                                [sparse_sq[i] if is_sparse else None
                                 for i, is_sparse in enumerate(self._sparse_flags)])
    s = self.settings
    lr = learning_rate_at(self.global_step, s.learning_rate, s.num_train_steps,
                          s.num_warmup_steps, s.poly_power, s.start_warmup_step)
    self.optimizer.apply_gradients(zip(grads, variables), lr * lr_gate, distributed=distributed)
    self.global_step.assign_add(1)
    sums["learning_rate"] = lr / float(ctx.num_replicas_in_sync)  # summed back to lr
    return sums

  def _stop_agreed(self):
    """Whether to stop before the next step (stop_requested), as every worker sees it: summed
    over the workers of a multi-worker run, so that all of them stop after the same step."""
    if strategies.num_workers(self.strategy) == 1:
      return self.stop_requested.read_value()
    flags = self.strategy.run(lambda: tf.cast(self.stop_requested, tf.float32))
    return self.strategy.reduce(SUM, flags, axis=None) > 0

  def _repeat(self, step, steps, combine):
    """In a tf.function: values = combine(zeros, step()), then while fewer than `steps` ran
    and no stop is agreed, values = combine(values, step()). combine(zeros, v) must be v (the
    step's values, or their sum from zero). Returns (values, stop).

    Every step runs in the loop's body, the first included: the graph holds one copy of the
    step. Grappler rewrites each copy of a step on its own, and two copies (one before the loop,
    one in it) could come out with float operations in different orders, e.g. GELU's
    0.044715 * x**3 as (0.044715 * x) * x**2 in one and x * (0.044715 * x**2) in the other: the
    first update of each call would then differ in the last bits from the others, and the
    weights would depend on iterations_per_loop and on where a run was resumed."""
    def more(done, stop, values):
      del values
      return tf.logical_and(done < steps, tf.logical_not(stop))

    def once_more(done, stop, values):
      del stop
      values = combine(values, step())
      return done + 1, self._stop_agreed(), values

    # The first stop is read after the first step, as each later one is read after its step.
    _, stop, values = tf.while_loop(more, once_more, (tf.constant(0), tf.constant(False),
                                                      self._zeros_of(step)))
    return values, stop

  def _zeros_of(self, step):
    """Zeros of the structure, dtypes and shapes of step()'s values (per replica where they are
    per replica), from a trace of `step` that is never run nor added to the graph. The trace of
    a tf.function the step calls is kept and reused by the loop's body."""
    values = tf.function(step, autograph=False).get_concrete_function().structured_outputs

    def zeros(value):
      if isinstance(value, tf.distribute.DistributedValues):
        local = self.strategy.experimental_local_results(value)[0]
        return self.strategy.experimental_distribute_values_from_function(
            lambda _: tf.zeros(local.shape, local.dtype))
      return tf.zeros(value.shape, value.dtype)
    return tf.nest.map_structure(zeros, values)

  def _train_loop_impl(self, iterator, steps):
    sums, stop = self._repeat(
        lambda: self.strategy.run(self._replica_step, args=(next(iterator),)), steps,
        lambda _, new: new)
    return {k: self.strategy.reduce(SUM, v, axis=None) for k, v in sums.items()}, stop

  def train_until_stopped(self, iterator, steps: int):
    """Runs `steps` updates in one compiled call, or fewer when stop_requested is set meanwhile
    (read before each update after the first: the call stops at a step boundary).

    Args:
      iterator: a (distributed) iterator of the global batches' per-replica features.
      steps: the most updates to run.

    Returns:
      ({name: float}, stopped): the last update's global sums of the objective, `loss` and
      `learning_rate`; whether stop_requested stopped the call (on every worker alike).
    """
    start = int(self.global_step.numpy())
    steps_tensor = tf.constant(steps, tf.int32)
    if fast_path.trace_first_call(self._train_loop, "the training step", (iterator, steps_tensor)):
      xla = " (XLA compiles the step as the first one runs)" if self.jit_compile else ""
      logger.info(f"running steps {start + 1}-{start + steps}{xla} ...")
    out, stopped = self._train_loop(iterator, steps_tensor)
    done = int(self.global_step.numpy()) - start
    self.records_consumed.assign_add(done * self.settings.train_batch_size)
    return {k: float(v) for k, v in out.items()}, bool(stopped)

  def train_steps(self, iterator, steps: int) -> dict:
    """Runs `steps` updates in one compiled call (train_until_stopped without a stop).

    Returns:
      {name: float}: the last update's global sums of the objective, `loss` and
      `learning_rate`.
    """
    return self.train_until_stopped(iterator, steps)[0]

  # -- evaluation -------------------------------------------------------------------------------
  def _eval_loop_impl(self, iterator, steps):
    def replica(features):
      return self.objective.sums(self.model(features, training=False), features)

    def batch():
      sums = self.strategy.run(replica, args=(next(iterator),))
      return {k: self.strategy.reduce(SUM, v, axis=None) for k, v in sums.items()}
    return self._repeat(batch, steps, lambda totals, sums: {k: totals[k] + sums[k] for k in sums})

  def evaluate(self, iterator, steps: int) -> dict:
    """Evaluates `steps` batches of `iterator` (no update); stops at a batch boundary when
    stop_requested is set meanwhile (a PreemptionWatcher's SIGTERM).

    Returns:
      {name: float}: the objective's metrics over all of them, plus `global_step`.

    Raises:
      Preempted: stop_requested stopped the evaluation (its metrics would be of a part).
    """
    step = int(self.global_step.numpy())
    steps_tensor = tf.constant(steps, tf.int32)
    fast_path.trace_first_call(self._eval_loop, "the evaluation step", (iterator, steps_tensor))
    batches = "1 batch" if steps == 1 else f"{steps} batches"
    logger.info(f"evaluating the model of step {step} on {batches} ...")
    totals, stopped = self._eval_loop(iterator, steps_tensor)
    if bool(stopped):
      raise preemption.Preempted(step, None, phase="the evaluation")
    metrics = self.objective.eval_metrics({k: float(v) for k, v in totals.items()})
    metrics["global_step"] = step
    return metrics

  # -- checkpoints ------------------------------------------------------------------------------
  def checkpoint(self):
    """A tf.train.Checkpoint of the model's parts, the optimizer, the step, the dropout layers'
    seed states (and loss scale)."""
    items = dict(model_parts(self.model), optimizer=self.optimizer, global_step=self.global_step,
                 records_consumed=self.records_consumed)
    seeds = dropout_seed_states(self.model)
    if seeds:
      items["dropout_seeds"] = seeds
    if self.loss_scale is not None:
      items["loss_scale"] = self.loss_scale
    return tf.train.Checkpoint(**items)


def dropout_seed_states(model):
  """The state variables of the model's Keras seed generators (its dropout layers'), in layer
  order. Each dropout draw advances its generator's state: checkpointed, a resumed run drops
  what an uninterrupted one drops (they are not model weights, so model_parts lacks them)."""
  return [generator.state for layer in model._flatten_layers()
          for generator in getattr(layer, "_seed_generators", [])]


def _non_finite_message(loss, step, latest):
  """The one line of a NonFiniteLossError. The newest checkpoint is named by the facts (the last
  one saved before the loss stopped being finite, and its step), not as a good one: its model
  may evaluate to NaN all the same."""
  if latest:
    found = re.search(r"-(\d+)$", latest)
    at = f", at step {found.group(1)}" if found else ""
    saved = f"The last checkpoint saved before the loss stopped being finite is {latest}{at}"
  else:
    saved = "No checkpoint was saved before the loss stopped being finite"
  return (f"loss is {loss} at step {step}; stopping without saving. {saved} (try a lower "
          "--learning_rate, or --mixed_precision=float32)")


def _progress_line(runner, values, step, total, steps_per_sec, eta):
  metrics = runner.objective.metrics(values)
  shown = " ".join(f"{k} {v:.4f}" for k, v in metrics.items())
  return (f"step {step}/{total} loss {values['loss']:.4f} {shown} "
          f"lr {values['learning_rate']:.3g} {steps_per_sec:.3f} steps/s "
          f"({1 / steps_per_sec:.3f} s/step) ETA {eta:.0f}s"), metrics


@dataclasses.dataclass
class TrainEvent:
  """What one training call reached, handed to each action of run_training.

  step: the step reached. values: the last update's global sums, `loss` and `learning_rate`.
  metrics: the objective's metrics of `values`. steps_per_second: of this call.
  checkpoint: the checkpoint saved at `step`, or None. scheduled: it is a scheduled one (every
  save_checkpoints_steps, and the last step), an evaluation point; a save made because of
  preemption is not. preempted: the run stops after the actions (a signal came).
  """
  step: int
  values: dict
  metrics: dict
  steps_per_second: float
  checkpoint: Optional[str] = None
  scheduled: bool = False
  preempted: bool = False


def summary_action(writer, examples_per_step=None):
  """An action writing each call's scalars (metrics, loss, learning rate, speed) to `writer`."""
  def write(event):
    scalars = dict(event.metrics, loss=event.values["loss"],
                   learning_rate=event.values["learning_rate"],
                   steps_per_second=event.steps_per_second)
    if examples_per_step:
      scalars["examples_per_second"] = event.steps_per_second * examples_per_step
    summaries.write_scalars(writer, event.step, scalars)
  return write


def after_save_action(after_save):
  """An action calling after_save(step, path) after each scheduled checkpoint (fine-tuning
  evaluates there). Not after a save made because of preemption: the run stops there, and an
  evaluation due at that step runs after the restart (the checkpoint is then pending)."""
  def call(event):
    if event.checkpoint and event.scheduled and not event.preempted:
      after_save(event.step, event.checkpoint)
  return call


def run_training(runner, make_iterator, manager, settings, actions=()):
  """Trains until num_train_steps, saving every save_checkpoints_steps (resumable), and when
  runner.stop_requested is set (see albert_tf.training.preemption): then at the step reached,
  after which it raises Preempted.

  `make_iterator(step)` gives the training input from `step` on (the step the run starts or
  resumes at); it is built once, so every record is read once per epoch however often the run
  checkpoints (a seeded input resumes where an interrupted run stopped: see
  albert_tf.data.epochs). Calls are cut so that checkpoints fall on call boundaries; how they are
  cut (iterations_per_loop, a resume) leaves the updates bit for bit alone (see Runner._repeat).
  A NaN/Inf loss stops the run with a NonFiniteLossError before anything is saved: every
  checkpoint is of a step whose loss was finite (which does not make its model sound). Each
  action (a function of a TrainEvent: summary_action, after_save_action...) runs after each
  call, in order, once its checkpoint is saved.

  Raises:
    Preempted: after the save and the actions, when a signal stopped the run.
    NonFiniteLossError: a NaN/Inf loss.
  """
  step = int(runner.global_step.numpy())
  iterator = make_iterator(step)
  total = settings.num_train_steps
  start_time, start_step = time.time(), step
  while step < total:
    next_save = (step // settings.save_checkpoints_steps + 1) * settings.save_checkpoints_steps
    n = min(settings.iterations_per_loop, next_save - step, total - step)
    loop_start = time.time()
    values, preempted = runner.train_until_stopped(iterator, n)
    done = int(runner.global_step.numpy()) - step
    step += done
    if not math.isfinite(values["loss"]):
      raise NonFiniteLossError(_non_finite_message(values["loss"], step,
                                                   manager.latest_checkpoint))
    steps_per_sec = done / max(time.time() - loop_start, 1e-9)
    overall = (step - start_step) / max(time.time() - start_time, 1e-9)
    eta = (total - step) / max(overall, 1e-9)
    line, metrics = _progress_line(runner, values, step, total, steps_per_sec, eta)
    logger.info(line)
    event = TrainEvent(step, values, metrics, steps_per_sec, preempted=preempted,
                       scheduled=step % settings.save_checkpoints_steps == 0 or step == total)
    if event.scheduled or preempted:
      event.checkpoint = manager.save(checkpoint_number=step)
      logger.info(f"saved checkpoint {event.checkpoint}")
    for action in actions:
      action(event)
    if preempted:
      raise preemption.Preempted(step, event.checkpoint)
  return step


