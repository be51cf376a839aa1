"""The one batching path of prediction: any iterable of raw inputs, in bounded memory, results in input order.

:func:`predict_stream` reads the inputs a *window* at a time
(``window_batches * batch_size`` of them), sorts the window's inputs by length
(:func:`length_batches`: short with short, so padding stays small), runs each
batch through ``predict`` (a list of raw inputs -> as many results) and yields
the window's results in input order before it reads the next window. So a
generator over any number of inputs runs in memory set by the batch size and
the longest input of a batch, never by the number of inputs.
:meth:`framework.engine.Task.predict` and ``predict_iter``, the ``oar run``
command and the server's batcher all go through it.
"""
import itertools
import numbers

from ..errors import InputError

__all__ = ["length_batches", "predict_stream", "text_length", "WINDOW_BATCHES"]

WINDOW_BATCHES = 32     # inputs are sorted by length within windows of this many batches


def length_batches(lengths, batch_size, max_tokens=None):
    """Groups of indices into ``lengths`` (ints), shortest first (ties in input order): at most ``batch_size``
    indices each and, with ``max_tokens``, at most that many padded positions (group size x its longest
    length); an input longer than ``max_tokens`` goes alone. Returns a list of lists of int."""
    groups, group = [], []
    for index in sorted(range(len(lengths)), key=lengths.__getitem__):
        full = len(group) == batch_size or (max_tokens is not None and (len(group) + 1) * lengths[index] > max_tokens)
        if group and full:
            groups.append(group)
            group = []
        group.append(index)
    return groups + ([group] if group else [])


def text_length(item):
    """The characters of a raw text input: a str's length, a pair's (tuple/list of str) summed; 0 for anything
    else (the task's own check then names what is wrong with it)."""
    if isinstance(item, str):
        return len(item)
    if isinstance(item, (tuple, list)):
        return sum(len(part) for part in item if isinstance(part, str))
    return 0


def _windows(inputs, size):
    iterator = iter(inputs)
    while window := list(itertools.islice(iterator, size)):
        yield window


def predict_stream(predict, inputs, batch_size, length=None, max_tokens=None, window_batches=WINDOW_BATCHES):
    """Yield ``predict``'s result for every input of ``inputs`` (any iterable), in input order.

    Args:
        predict: a list of at most ``batch_size`` raw inputs -> a list of as many results.
        inputs: any iterable (list, tuple, generator, NumPy array); read one window at a time.
        batch_size: inputs per ``predict`` call (an int >= 1).
        length: ``length(input) -> int`` to sort each window by (None: batches in input order).
        max_tokens: most padded positions of a batch (see :func:`length_batches`); needs ``length``.
        window_batches: inputs read ahead, in batches.

    An :class:`~framework.errors.InputError` about one input of a batch (its ``index``) is raised again, its
    ``index`` made that input's position in ``inputs``.
    """
    if isinstance(batch_size, bool) or not isinstance(batch_size, numbers.Integral) or batch_size < 1:
        raise InputError(f"batch_size must be an integer >= 1, got {batch_size!r}")
    batch_size = int(batch_size)                   # a NumPy integer too
    start = 0
    for window in _windows(inputs, window_batches * batch_size):
        if length is None:
            groups = [list(range(i, min(i + batch_size, len(window)))) for i in range(0, len(window), batch_size)]
        else:
            groups = length_batches([length(item) for item in window], batch_size, max_tokens)
        results = [None] * len(window)
        for group in groups:
            try:
                outputs = predict([window[i] for i in group])
            except InputError as err:
                if err.index is None or not 0 <= err.index < len(group):
                    raise
                err.index = start + group[err.index]          # the same error, about its place in ``inputs``
                raise
            if len(outputs) != len(group):
                raise RuntimeError(f"predict returned {len(outputs)} results for {len(group)} inputs")
            for i, output in zip(group, outputs):
                results[i] = output
        start += len(window)
        yield from results
