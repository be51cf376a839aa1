"""Inputs and outputs of ``oar run`` and ``oar infer``, the way a Unix tool reads and writes them.

- ``read_lines`` yields one input per line of a file or of stdin (``-``), blank
  lines included, decoded with the given encoding; a byte that does not decode
  is an ``InputError`` naming the file, the line and the byte offset.
- ``predict_in_order`` predicts in batches grouped by length (short texts with
  short texts, so padding stays small) and yields one result per input, in
  input order; a blank input gets an empty result without reaching the model.
- ``ResultWriter`` prints one line per result, readable or ``--json`` (one
  object that echoes the input), to stdout or to ``--output`` (written whole,
  then renamed into place).
"""
import json
import os
import sys

from framework.errors import InputError
from framework.progress import progress_bar
from framework.serialization import atomic_write

__all__ = ["read_lines", "predict_in_order", "format_result", "ResultWriter", "WINDOW_BATCHES"]

WINDOW_BATCHES = 32   # inputs are sorted by length within windows of this many batches (bounded memory on stdin)


def _is_ascii_compatible(encoding):
    """True when ``encoding`` writes a newline as the byte ``\\n`` (so a file splits into lines as bytes)."""
    try:
        return "\n".encode(encoding) == b"\n" and "a".encode(encoding) == b"a"
    except LookupError:
        raise InputError(f"--encoding {encoding}: unknown encoding (e.g. utf-8, gbk, gb18030, utf-16)") from None


def _decode_error(name, line_number, offset, err, encoding):
    byte = err.object[err.start:err.start + 1].hex()
    return InputError(f"{name}, line {line_number}: byte 0x{byte} at offset {offset} is not valid {encoding}; "
                      f"give the file's encoding with --encoding (e.g. --encoding gbk)")


def read_lines(path, encoding="utf-8"):
    """Yield each line of the text file ``path`` (``-``: stdin) without its line ending.

    Blank lines are yielded too (as ``""``), so outputs line up with inputs. A
    UTF-8 byte-order mark at the start is dropped.
    """
    name = "stdin" if path == "-" else path
    ascii_compatible = _is_ascii_compatible(encoding)
    if path != "-" and os.path.isdir(path):
        raise InputError(f"input file {path} is a directory; give a text file with one input per line")
    if path != "-" and not os.path.isfile(path):
        raise InputError(f"input file not found: {path}")
    stream = sys.stdin.buffer if path == "-" else open(path, "rb")
    try:
        if not ascii_compatible:        # UTF-16/32: decode the whole file, then split
            data = stream.read()
            try:
                text = data.decode(encoding)
            except UnicodeDecodeError as err:
                raise _decode_error(name, data[:err.start].count("\n".encode(encoding)) + 1, err.start, err,
                                    encoding) from None
            yield from text.lstrip("\ufeff").splitlines()
            return
        offset = 0
        for number, raw in enumerate(stream, 1):
            try:
                line = raw.decode(encoding)
            except UnicodeDecodeError as err:
                raise _decode_error(name, number, offset + err.start, err, encoding) from None
            offset += len(raw)
            if number == 1:
                line = line.lstrip("\ufeff")
            yield line.rstrip("\n").rstrip("\r")
    finally:
        if stream is not sys.stdin.buffer:
            stream.close()


def _chunks(iterable, size):
    chunk = []
    for item in iterable:
        chunk.append(item)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def predict_in_order(task, inputs, batch_size=64, sort_by_length=True, total=None, where=None, **options):
    """Yield ``(input, result)`` for every input, in input order.

    ``inputs`` is any iterable (a stdin stream too); within windows of
    ``WINDOW_BATCHES * batch_size`` inputs the non-blank ones are sorted by
    length and predicted ``batch_size`` at a time with ``task.predict(batch,
    **options)``. A blank text input yields ``{}``. A progress bar on stderr
    counts the inputs (``total`` when known). An ``InputError`` about one input
    of a batch is restated with ``where(n)``, the description of input ``n``
    (1-based, e.g. ``reviews.txt, line 7``).
    """
    if batch_size < 1:
        raise InputError(f"--batch_size must be at least 1, got {batch_size}")
    where = where or (lambda number: f"input {number}")
    start = 0
    with progress_bar(total=total, desc="predicting", unit="input") as bar:
        for window in _chunks(inputs, WINDOW_BATCHES * batch_size):
            results = [{} for _ in window]
            todo = [i for i, item in enumerate(window) if not (isinstance(item, str) and not item.strip())]
            if sort_by_length:
                todo.sort(key=lambda i: len(window[i]))
            for batch in _chunks(todo, batch_size):
                try:
                    predictions = task.predict([window[i] for i in batch], **options)
                except InputError as err:
                    if err.index is None or not 0 <= err.index < len(batch):
                        raise
                    raise err.located(where(start + batch[err.index] + 1)) from None
                for i, result in zip(batch, predictions):
                    results[i] = result
                bar.update(len(batch))
            bar.update(len(window) - len(todo))
            start += len(window)
            yield from zip(window, results)


def _format_topk(pairs):
    return ", ".join(f"{label} {prob:.3f}" for label, prob in pairs)


def format_result(result):
    """One readable line for a prediction dict.

    LAC: ``word/tag`` pairs separated by spaces (words never hold spaces);
    classification: ``label<TAB>score``; top-k: ``label prob, …`` (video
    models with motion and shape groups: ``motion: … | shape: …``); an empty
    result (a blank input): an empty line; anything else: its JSON.
    """
    if not result:
        return ""
    if "words" in result and "tags" in result:
        return " ".join(f"{w}/{t}" for w, t in zip(result["words"], result["tags"]))
    groups = [key for key in result if key.endswith("_topk")]
    if groups:
        return " | ".join(f"{key[:-len('_topk')]}: {_format_topk(result[key])}" for key in groups)
    if "topk" in result:
        return _format_topk(result["topk"])
    if "label" in result and "score" in result:
        return f"{result['label']}\t{result['score']:.4f}"
    return json.dumps(result, ensure_ascii=False)


class ResultWriter:
    """Writes one line per result to stdout, or to ``path`` (complete or not at all: written, then renamed).

    ``as_json``: ``{"input": input, **result}`` per line; otherwise ``format_result``.
    Use as a context manager.
    """

    def __init__(self, path=None, as_json=False):
        self.path, self.as_json = path, as_json
        self._context = None

    def __enter__(self):
        if self.path and self.path != "-":
            self._context = atomic_write(self.path, "w", encoding="utf-8")
            self.stream = self._context.__enter__()
        else:
            self.stream = sys.stdout
        return self

    def write(self, item, result):
        line = json.dumps({"input": item, **result}, ensure_ascii=False) if self.as_json else format_result(result)
        self.stream.write(line + "\n")
        if self._context is None:
            self.stream.flush()

    def __exit__(self, *exc):
        if self._context is not None:
            return self._context.__exit__(*exc)
        return False
