"""Dynamic batching: requests for one model, merged into few ``predict`` calls on a thread of their own.

A :class:`Batcher` owns a bounded queue and one worker thread. The event loop
calls :meth:`Batcher.submit` (a full queue raises :class:`QueueFull` at once);
the worker takes the oldest request and every other one already queued, up to
``max_batch_size`` instances. While the model is under concurrent load (its
previous batch merged more than one request) it also waits up to
``max_delay_s`` for more; a lone client never waits. A batch's instances go
to the task's one batching path (``task.predict(instances, batch_size=
max_batch_size)``, :func:`framework.engine.batching.predict_stream`: sorted by
length, so short texts are not padded to the longest) and each caller gets
back exactly its own results. A request that timed out before its batch formed
is dropped unrun.

One request's bad input fails that request only: an ``InputError`` whose
``index`` points into the batch fails its owner (the error restated with the
owner's own index) and the rest run again; any other error reruns the requests
one by one, and a lone request's instances one by one, so the error lands on
the instance that caused it.
"""
import asyncio
import queue
import threading
import time
from dataclasses import dataclass, field

from framework.errors import InputError, UserError

__all__ = ["Batcher", "QueueFull"]

_STOP = object()


def _message(err):
    """An error's message without an ``input N:`` prefix."""
    return getattr(err, "message", None) or str(err)


class QueueFull(Exception):
    """The model's queue already holds ``max_queue`` requests."""


@dataclass
class _Job:
    inputs: list
    loop: asyncio.AbstractEventLoop
    future: asyncio.Future = field(default=None)
    dropped: bool = False


class Batcher:
    """Merges the requests of one model into batches run by ``predict`` (a task's ``predict``: an iterable of
    inputs and ``batch_size`` -> list of results).

    ``on_batch(size)`` is called with the instances of every batch formed, ``on_depth(n)`` with the queue
    depth whenever it changes.
    """

    def __init__(self, predict, max_batch_size=64, max_delay_s=0.005, max_queue=1024, on_batch=None,
                 on_depth=None, name="model"):
        self.predict, self.max_batch_size, self.max_delay_s = predict, max_batch_size, max_delay_s
        self.on_batch, self.on_depth = on_batch or (lambda size: None), on_depth or (lambda depth: None)
        self._queue = queue.Queue(max_queue)
        self._held = None               # a request taken from the queue that opens the next batch
        self._last_requests = 0
        self._thread = threading.Thread(target=self._serve, name=f"batcher-{name}", daemon=True)

    def start(self):
        """Start the worker thread."""
        self._thread.start()

    def stop(self):
        """Finish every queued request, then end the worker thread."""
        if self._thread.is_alive():
            self._queue.put(_STOP)
            self._thread.join()

    async def submit(self, inputs, timeout):
        """The results of ``inputs`` (one per input); ``QueueFull`` at once when the queue is full,
        ``TimeoutError`` after ``timeout`` seconds (the request is then dropped), else what ``predict`` raised."""
        loop = asyncio.get_running_loop()
        job = _Job(inputs, loop, loop.create_future())
        try:
            self._queue.put_nowait(job)
        except queue.Full:
            raise QueueFull(f"{self._queue.maxsize} requests are waiting") from None
        self.on_depth(self._queue.qsize())
        try:
            return await asyncio.wait_for(job.future, timeout)
        except asyncio.TimeoutError:
            job.dropped = True
            raise

    # ---- the worker thread ---------------------------------------------------------
    def _take(self, timeout=None):
        """The held request, else the next queued one, waiting ``timeout`` seconds at most (None: for ever)."""
        if self._held is not None:
            job, self._held = self._held, None
            return job
        if timeout is None or timeout > 0:
            job = self._queue.get(timeout=timeout)
        else:
            job = self._queue.get_nowait()
        self.on_depth(self._queue.qsize())
        return job

    def _next_batch(self):
        """The requests of the next batch (None once stopped)."""
        first = self._take()
        if first is _STOP:
            return None
        jobs, count = [first], len(first.inputs)
        deadline = time.monotonic() + (self.max_delay_s if self._last_requests > 1 else 0.0)
        while count < self.max_batch_size:
            try:
                job = self._take(timeout=deadline - time.monotonic())
            except queue.Empty:
                break
            if job is _STOP or count + len(job.inputs) > self.max_batch_size:
                self._held = job
                break
            jobs.append(job)
            count += len(job.inputs)
        self._last_requests = len(jobs)
        return jobs

    def _serve(self):
        while (jobs := self._next_batch()) is not None:
            jobs = [job for job in jobs if not job.dropped]
            if jobs:
                self.on_batch(sum(len(job.inputs) for job in jobs))
                self._run(jobs)

    def _predict(self, inputs):
        """Results of ``inputs`` in order (the task batches them by length); an ``InputError`` about one input
        carries its index in ``inputs``."""
        results = self.predict(inputs, batch_size=self.max_batch_size)
        if len(results) != len(inputs):
            raise RuntimeError(f"predict returned {len(results)} results for {len(inputs)} inputs")
        return results

    def _run(self, jobs):
        try:
            results = self._predict([x for job in jobs for x in job.inputs])
        except Exception as err:                # noqa: BLE001 - every failure goes back to its callers
            self._isolate(jobs, err)
            return
        start = 0
        for job in jobs:
            self._settle(job, result=results[start:start + len(job.inputs)])
            start += len(job.inputs)

    def _isolate(self, jobs, err):
        """Fail only the request (and instance) that made the batch of ``jobs`` fail with ``err``."""
        if isinstance(err, InputError) and err.index is not None:
            start = 0
            for job in jobs:
                if start <= err.index < start + len(job.inputs):
                    self._settle(job, error=InputError(err.message, index=err.index - start))
                    rest = [other for other in jobs if other is not job]
                    if rest:
                        self._run(rest)
                    return
                start += len(job.inputs)
        if len(jobs) > 1:
            for job in jobs:
                self._run([job])
            return
        if isinstance(err, UserError) and getattr(err, "index", None) is None:
            err = self._culprit(jobs[0].inputs, err)
        self._settle(jobs[0], error=err)

    def _culprit(self, inputs, err):
        """``err`` (a UserError about no input in particular) as an InputError about the input that caused it:
        the only one, or the first of several that fails alone."""
        if len(inputs) == 1:
            return InputError(_message(err), index=0)
        for index, item in enumerate(inputs):
            try:
                self._predict([item])
            except UserError as alone:
                return InputError(_message(alone), index=index)
        return err

    @staticmethod
    def _settle(job, result=None, error=None):
        def settle():
            if not job.future.done():
                job.future.set_exception(error) if error is not None else job.future.set_result(result)
        job.loop.call_soon_threadsafe(settle)
