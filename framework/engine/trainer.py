"""The Trainer: one training loop for every task.

It knows nothing of NLP, vision or video: a Task gives it ``loss(batch)``,
``predict_batch(batch)`` and ``metrics()``. It runs epochs (or a step budget),
evaluates every N steps, keeps the best checkpoint by a named metric and the
last one, resumes exactly, stops early, stops on a NaN/inf loss, shows a
progress bar (tqdm, on stderr: epoch, step, loss, learning rate, samples/s;
:func:`framework.progress.progress_bar`) and writes every evaluation to
``metrics.jsonl``. When the bar is hidden (stderr is not a terminal) the same
figures go to stderr as a plain line every ``log_every`` steps, so logs keep
them. A file that cannot be written in ``output_dir`` is an
:class:`~framework.engine.checkpoint.OutputDirError` naming it. With ``amp``
it runs the loss forward under ``framework.amp.autocast`` and the backward
and update through a ``GradScaler``.
"""
import contextlib
import json
import math
import os
import sys
import time

import numpy
from tqdm import tqdm

from .. import amp as fw_amp
from .. import backend, distributed
from .. import random as fw_random
from ..tensor import no_grad
from ..progress import progress_bar
from .checkpoint import save_checkpoint, load_checkpoint, restore_model, CheckpointError, OutputDirError
from ..serialization import remove_stale_temporaries
from .task import to_tensors, batch_size_of
from ..errors import UserError, describe_os_error

__all__ = ["Trainer", "TrainingError", "evaluate", "AMP_OPTIONS", "AMP_NONFINITE_LOSS_LIMIT", "amp_settings"]

AMP_OPTIONS = {"dtype": str, "init_scale": float, "growth_factor": float, "backoff_factor": float,
               "growth_interval": int}
AMP_NONFINITE_LOSS_LIMIT = 10  # under amp, this many non-finite losses in a row stop training


class TrainingError(UserError, RuntimeError):
    """Training cannot go on (e.g. the loss became NaN or infinite)."""


def evaluate(task, loader, device=None, progress=False):
    """Run ``task.predict_batch`` over ``loader`` without gradients; returns the merged metric dict.

    When ``loader`` reads one shard per rank (its batch sampler has a
    ``world_size`` > 1), the metrics' counts are merged over the ranks first,
    so every rank returns the metrics of the whole dataset. ``progress``: a
    bar over the batches on stderr (rank 0 only; hidden off a terminal).
    """
    metrics = task.metrics()
    for metric in metrics:
        metric.reset()
    task.model.eval()
    try:
        total = len(loader)
    except TypeError:                                   # a stream of unknown length
        total = None
    enabled = progress and distributed.get_rank() == 0
    with no_grad(), progress_bar(loader, total=total, desc="eval", unit="batch", enabled=enabled) as batches:
        for batch in batches:
            tensors = to_tensors(batch, device)
            outputs = task.predict_batch(tensors)
            for metric in metrics:
                metric.update(outputs, batch)
    if getattr(getattr(loader, "batch_sampler", None), "world_size", 1) > 1:
        distributed.reduce_metrics(metrics)
    result = {}
    for metric in metrics:
        result.update(metric.compute())
    return result


def amp_settings(option, device=None):
    """The autocast dtype and GradScaler for the Trainer's ``amp`` argument.

    ``option``: False/None (off), True (float16, default scaler) or a dict with
    any of ``AMP_OPTIONS`` (``dtype`` plus the GradScaler arguments).
    Returns ``(dtype name, GradScaler)``, or ``(None, None)`` when off. Raises
    ValueError for an unknown key, a bad value or a dtype the array module of
    ``device`` lacks.
    """
    if option is None or option is False:
        return None, None
    if option is not True and not isinstance(option, dict):
        raise ValueError(f"amp must be true, false or a mapping of {', '.join(AMP_OPTIONS)}; got {option!r}")
    options = {} if option is True else dict(option)
    unknown = sorted(set(options) - set(AMP_OPTIONS))
    if unknown:
        raise ValueError(f"amp: unknown keys {unknown} (valid keys: {', '.join(AMP_OPTIONS)})")
    dtype = options.pop("dtype", "float16")
    fw_amp.resolve_dtype(dtype, backend.array_module(device))
    return dtype, fw_amp.GradScaler(**options)


class _Progress:
    """Training progress on stderr: a tqdm bar over the run's steps (epoch in its description; loss, lr and
    samples/s after it) and messages written with ``tqdm.write`` so they never break the bar.

    When the bar is hidden (stderr is not a terminal, see :func:`framework.progress.progress_bar`), the same
    figures are written as one plain line every ``every`` steps. ``stream`` (None: ``sys.stderr`` at the
    time of writing) receives the messages and lines; ``enabled=False`` shows nothing.
    """

    def __init__(self, total_steps, every, enabled=True, stream=None):
        self.total, self.every, self.enabled, self.stream = total_steps, every, enabled, stream
        self.bar = None
        self.reset_window()

    def reset_window(self):
        self.window_start = time.perf_counter()
        self.window_samples = 0

    def open(self, step, epoch, epochs):
        """Start the bar at ``step`` of epoch ``epoch`` (from 0): a resumed run starts where it stopped."""
        self.close()
        self.bar = progress_bar(total=self.total, initial=step, desc=f"epoch {epoch + 1}/{epochs}", unit="step",
                                enabled=self.enabled)
        self.reset_window()

    def close(self):
        if self.bar is not None:
            self.bar.close()
            self.bar = None

    def update(self, epoch, epochs, step, loss, lr, samples):
        self.window_samples += samples
        if not self.enabled:
            return
        visible = self.bar is not None and not self.bar.disable
        if visible:
            self.bar.set_description(f"epoch {epoch + 1}/{epochs}", refresh=False)
            self.bar.update(1)
        if step % self.every:
            return
        rate = self.window_samples / max(time.perf_counter() - self.window_start, 1e-9)
        if visible:
            self.bar.set_postfix_str(f"loss {loss:.4f} lr {lr:.3g} {rate:.1f} samples/s")
        else:
            total = f"/{self.total}" if self.total else ""
            self.message(f"epoch {epoch + 1}/{epochs} step {step}{total} loss {loss:.4f} lr {lr:.3g} "
                         f"{rate:.1f} samples/s")
        self.reset_window()

    def message(self, text):
        """Write ``text`` as its own line (above the bar while one is shown)."""
        if self.enabled:
            tqdm.write(text, file=self.stream or sys.stderr)


class Trainer:
    """Train a Task with an optimizer over a DataLoader.

    Args:
        task: a ``framework.engine.Task`` (``model``, ``loss``, ``predict``, ``metrics``).
        optimizer: a ``framework.optimizer.Optimizer`` over the model's parameters.
        train_loader: a ``framework.io.DataLoader`` (its ``state_dict`` gives the
            position for exact resume).
        eval_loader: optional loader for evaluation.
        scheduler: optional ``framework.optimizer.lr.LRScheduler``, stepped every
            epoch (``lr_step="epoch"``) or every step (``"step"``).
        epochs / max_steps: stop after this many epochs, or steps (either may be None).
        eval_every: evaluate every N steps, and once more after the last step when it is not a multiple of N;
            None evaluates at the end of each epoch.
        metric / metric_mode: name of the metric that chooses ``best.npz`` and
            its direction ("max" or "min"); default: the first metric computed.
        early_stop: stop after this many evaluations without improvement.
        output_dir: where ``last.npz``, ``best.npz`` and ``metrics.jsonl`` go (None: nothing written).
        log_every: steps between progress lines. device: 'cpu' or 'gpu'.
        config: the resolved config, stored inside checkpoints (its ``model`` section also names the
            likely key when a resumed checkpoint does not fit the model).
        assets: the task's files besides the weights (``{config key: {"value", "sha256"}}``, as
            :func:`framework.engine.runner.train` records them), stored inside checkpoints.
        amp: mixed precision (see :func:`amp_settings`): the loss forward runs
            under ``autocast`` and backward/update through a ``GradScaler``
            whose state is checkpointed. A step whose gradients hold inf/NaN is
            skipped and logged (the scale backs off), as with PyTorch's scaler;
            so is a step with a non-finite loss, but
            ``AMP_NONFINITE_LOSS_LIMIT`` of those in a row raise TrainingError
            (the loss is computed before scaling, so a smaller scale cannot fix
            it). Without amp the first non-finite loss raises.

    Under data parallelism (``framework.distributed``) every rank runs this
    loop on its shard: the loss shown and checked for NaN is the mean over
    ranks, and only rank 0 prints and writes files. ``save`` (so ``fit``) is
    then collective: every rank calls it.
    """

    def __init__(self, task, optimizer, train_loader, eval_loader=None, scheduler=None, lr_step="epoch",
                 epochs=1, max_steps=None, eval_every=None, metric=None, metric_mode="max", early_stop=None,
                 output_dir=None, log_every=10, device=None, config=None, progress=True, amp=False, assets=None):
        if lr_step not in ("epoch", "step"):
            raise ValueError(f"Trainer: lr_step must be 'epoch' or 'step', got {lr_step!r}")
        if metric_mode not in ("max", "min"):
            raise ValueError(f"Trainer: metric_mode must be 'max' or 'min', got {metric_mode!r}")
        if epochs is None and max_steps is None:
            raise ValueError("Trainer: give epochs or max_steps")
        self.task, self.optimizer, self.scheduler = task, optimizer, scheduler
        self.train_loader, self.eval_loader = train_loader, eval_loader
        self.lr_step, self.epochs, self.max_steps = lr_step, epochs, max_steps
        self.eval_every, self.metric, self.metric_mode = eval_every, metric, metric_mode
        self.early_stop, self.output_dir, self.device, self.config = early_stop, output_dir, device, config
        self.assets = assets
        self.rank, self.world_size = distributed.get_rank(), distributed.get_world_size()
        self.amp_dtype, self.scaler = amp_settings(amp, device)
        steps_per_epoch = len(train_loader)
        total = max_steps if max_steps is not None else steps_per_epoch * epochs
        self.show_progress = progress and self.rank == 0
        self.progress = _Progress(total, max(1, log_every), enabled=self.show_progress)
        self.state = {"epoch": 0, "step": 0, "best": None, "best_step": -1, "bad_evals": 0, "last_loss": None,
                      "skipped_steps": 0, "nonfinite_losses": 0}
        self.history = []

    # ---- paths ------------------------------------------------------------
    def _path(self, name):
        return None if self.output_dir is None else os.path.join(self.output_dir, name)

    @property
    def last_checkpoint(self):
        path = self._path("last.npz")
        return path if path and os.path.isfile(path) else None

    # ---- checkpoints ------------------------------------------------------
    def save(self, name):
        """Write the full training state to ``output_dir/name``; returns the path."""
        trainer_state = self._trainer_state()
        if self.rank != 0:
            return self._path(name)
        path = self._path(name)
        try:
            return save_checkpoint(path, self.task.model, self.optimizer, self.scheduler,
                                   rng=fw_random.get_rng_state(), loader=self.train_loader.state_dict(),
                                   trainer=trainer_state, config=self.config, assets=self.assets)
        except OSError as err:
            raise OutputDirError(f"cannot write the checkpoint {path}: {describe_os_error(err)}") from None

    def _trainer_state(self):
        state = dict(self.state)
        state["best"] = float("nan") if state["best"] is None else state["best"]
        state["last_loss"] = float("nan") if state["last_loss"] is None else state["last_loss"]
        if self.scaler is not None:
            state["scaler"] = self.scaler.state_dict()
        if self.world_size > 1:  # the random streams of ranks 1…N-1 (rank 0's is the checkpoint's ``rng``)
            state["rank_rng"] = distributed.all_gather_object(fw_random.get_rng_state())[1:]
        return state

    def resume(self, path=None):
        """Restore model, optimizer, schedule, RNG, loader position and counters from a checkpoint.

        ``path`` defaults to ``output_dir/last.npz``.
        """
        path = path or self._path("last.npz")
        if path is None:
            raise CheckpointError("resume: no checkpoint path and no output_dir")
        state = load_checkpoint(path)
        restore_model(self.task.model, state, path, (self.config or {}).get("model"))
        if "optimizer" in state:
            self.optimizer.set_state_dict(state["optimizer"])
        if self.scheduler is not None and "scheduler" in state:
            self.scheduler.set_state_dict(state["scheduler"])
        if "rng" in state:
            fw_random.set_rng_state(state["rng"])
        if "loader" in state:
            self.train_loader.set_state_dict(state["loader"])
            self.state["epoch"] = int(state["loader"]["epoch"])
        saved = state.get("trainer", {})
        for key in ("step", "best_step", "bad_evals", "skipped_steps", "nonfinite_losses"):
            if key in saved:
                self.state[key] = int(saved[key])
        for key in ("best", "last_loss"):
            if key in saved:
                value = float(saved[key])
                self.state[key] = None if math.isnan(value) else value
        if self.scaler is not None and "scaler" in saved:  # a run without amp before has none: start afresh
            self.scaler.load_state_dict(saved["scaler"])
        if self.rank > 0:  # each rank goes on with its own random stream (a fresh one if N changed)
            streams = saved.get("rank_rng", [])
            if len(streams) == self.world_size - 1:
                fw_random.set_rng_state(streams[self.rank - 1])
            else:
                fw_random.seed(distributed.rank_seed(self.state["step"], self.rank))
        return path

    # ---- the loop ---------------------------------------------------------
    def fit(self):
        """Train until the epoch/step budget or an early stop; returns a summary dict."""
        state = self.state
        if self.output_dir and self.rank == 0:
            remove_stale_temporaries(self.output_dir)    # left by checkpoint writes of a killed run
        epochs = self.epochs if self.epochs is not None else math.ceil(self.max_steps / len(self.train_loader))
        self.progress.total = self.max_steps if self.max_steps is not None else len(self.train_loader) * epochs
        self.progress.open(state["step"], min(state["epoch"], epochs - 1), epochs)
        try:
            return self._fit(epochs)
        finally:
            self.progress.close()

    def _fit(self, epochs):
        model, state = self.task.model, self.state
        stopped_early = False
        while state["epoch"] < epochs and not self._budget_done():
            model.train()
            for batch in self.train_loader:
                loss = self._train_step(batch)
                state["step"] += 1
                state["last_loss"] = loss
                self.progress.update(state["epoch"], epochs, state["step"], loss, self.optimizer.get_lr(),
                                     batch_size_of(batch) * self.world_size)
                if self.eval_every and state["step"] % self.eval_every == 0:
                    stopped_early = self._evaluate_and_save()
                    model.train()
                if stopped_early or self._budget_done():
                    break
            else:  # the epoch ran to its end
                state["epoch"] += 1
                if self.scheduler is not None and self.lr_step == "epoch":
                    self.scheduler.step()
                if not self.eval_every:
                    stopped_early = self._evaluate_and_save()
                elif self.output_dir:
                    self.save("last.npz")
            if stopped_early:
                break
        if self.eval_every and not stopped_early and not self._evaluated_at_this_step():
            stopped_early = self._evaluate_and_save()    # the steps after the last multiple of eval_every
        if self.output_dir and not stopped_early:
            self.save("last.npz")
        return {"epoch": state["epoch"], "step": state["step"], "best": state["best"],
                "best_step": state["best_step"], "stopped_early": stopped_early, "history": self.history,
                "skipped_steps": state["skipped_steps"]}

    def _append_record(self, record):
        """Append ``record`` as one JSON line to ``output_dir/metrics.jsonl``."""
        path = self._path("metrics.jsonl")
        try:
            os.makedirs(self.output_dir, exist_ok=True)
            with open(path, "a") as f:
                f.write(json.dumps(record) + "\n")
        except OSError as err:
            raise OutputDirError(f"cannot write {path}: {describe_os_error(err)}") from None

    def _evaluated_at_this_step(self):
        return bool(self.history) and self.history[-1]["step"] == self.state["step"]

    def _budget_done(self):
        return self.max_steps is not None and self.state["step"] >= self.max_steps

    def _train_step(self, batch):
        tensors = to_tensors(batch, self.device)
        with fw_amp.autocast(dtype=self.amp_dtype) if self.scaler else contextlib.nullcontext():
            loss = self.task.loss(tensors)
        value = float(loss.item())
        if self.world_size > 1:  # every rank sees the mean loss, so all stop together on NaN
            value = float(distributed.all_reduce(numpy.array([value]), "avg")[0])
        self._check_loss(value)
        self.optimizer.clear_grad()
        if self.scaler is None:
            loss.backward()
            self.optimizer.step()
        else:
            self._scaled_step(loss, value)
        if self.scheduler is not None and self.lr_step == "step":
            self.scheduler.step()
        return value

    def _check_loss(self, value):
        """Count non-finite losses in a row; raise TrainingError past the limit (1 without amp)."""
        state = self.state
        state["nonfinite_losses"] = 0 if math.isfinite(value) else state["nonfinite_losses"] + 1
        limit = 1 if self.scaler is None else AMP_NONFINITE_LOSS_LIMIT
        if state["nonfinite_losses"] >= limit:
            last = self.last_checkpoint or "none saved yet"
            streak = f", the {limit}th in a row under amp" if self.scaler else ""
            raise TrainingError(f"loss is {value} at step {state['step'] + 1} (epoch {state['epoch'] + 1}{streak}); "
                                f"last good checkpoint: {last}")

    def _scaled_step(self, loss, value):
        """Backward of the scaled loss and the scaler's step; a skipped step is counted and logged."""
        scale = self.scaler.get_scale()
        with numpy.errstate(over="ignore", invalid="ignore"):  # an overflow here is the scaler's to handle
            self.scaler.scale(loss).backward()
            stepped = self.scaler.step(self.optimizer)
        self.scaler.update()
        if not stepped:
            self.state["skipped_steps"] += 1
            cause = f"loss is {value}" if not math.isfinite(value) else "gradients overflowed"
            self.progress.message(f"step {self.state['step'] + 1}: {cause} at loss scale {scale:g}; step skipped, "
                                  f"scale now {self.scaler.get_scale():g}")

    def _evaluate_and_save(self):
        """Evaluate, log, keep best/last checkpoints; True when early stopping triggers."""
        state = self.state
        record = {"epoch": state["epoch"], "step": state["step"], "train_loss": state["last_loss"],
                  "lr": self.optimizer.get_lr(), "time": time.time()}
        if self.scaler is not None:
            record.update(loss_scale=self.scaler.get_scale(), skipped_steps=state["skipped_steps"])
        metrics = evaluate(self.task, self.eval_loader, self.device, progress=self.show_progress) \
            if self.eval_loader is not None else {}
        record.update(metrics)
        self.history.append(record)
        improved = False
        if metrics:
            name = self.metric or next(iter(metrics))
            if name not in metrics:
                raise TrainingError(f"metric {name!r} is not computed by the task; it computes {sorted(metrics)}")
            value = metrics[name]
            best = state["best"]
            improved = best is None or (value > best if self.metric_mode == "max" else value < best)
            if improved:
                state["best"], state["best_step"], state["bad_evals"] = value, state["step"], 0
            else:
                state["bad_evals"] += 1
            record["best"] = state["best"]
        shown = " ".join(f"{k} {v:.4f}" for k, v in metrics.items())
        self.progress.message(f"eval at step {state['step']}: {shown}" if shown else f"step {state['step']} done")
        stop = bool(self.early_stop) and state["bad_evals"] >= self.early_stop
        if self.output_dir:
            if self.rank == 0:
                self._append_record(record)
            self.save("last.npz")
            if improved:
                self.save("best.npz")
        if stop:
            self.progress.message(f"early stop: no improvement of {self.metric or 'the metric'} "
                                  f"in {state['bad_evals']} evaluations")
        return stop
