"""Inputs and outputs of ``oar run`` and ``oar infer``, the way a Unix tool reads and writes them.

- ``read_lines`` yields one input per line of a file or of stdin (``-``), blank
  lines included, decoded with the given encoding; a byte that does not decode
  is an ``InputError`` naming the file, the line and the byte offset.
- ``predict_in_order`` predicts in batches grouped by length (short texts with
  short texts, so padding stays small) and yields one result per input, in
  input order; a blank input gets an empty result without reaching the model.
- ``result_writer`` prints one line per result, readable or ``--json`` (one
  object that echoes the input), to stdout or to ``--output`` (written whole,
  then renamed into place).
"""
import contextlib
import json
import os
import sys

from framework.errors import InputError
from framework.progress import progress_bar
from framework.serialization import atomic_write

__all__ = ["read_lines", "count_lines", "predict_in_order", "format_result", "result_writer", "WINDOW_BATCHES"]

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
    """The lines of the text file ``path`` (``-``: stdin) without their line endings, as an iterator.

    The path and the encoding are checked now (an ``InputError`` before any
    work); the lines are read and decoded as they are consumed. Blank lines are
    yielded too (as ``""``), so outputs line up with inputs. A UTF-8 byte-order
    mark at the start is dropped.
    """
    ascii_compatible = _is_ascii_compatible(encoding)
    if path != "-" and os.path.isdir(path):
        raise InputError(f"input file {path} is a directory; give a text file with one input per line")
    if path != "-" and not os.path.isfile(path):
        raise InputError(f"input file not found: {path}")
    stream = sys.stdin.buffer if path == "-" else open(path, "rb")
    return _decoded_lines(stream, "stdin" if path == "-" else path, encoding, ascii_compatible)


def count_lines(path, encoding="utf-8"):
    """How many lines :func:`read_lines` gives for ``path``, counted on the bytes (None for stdin, or for an
    encoding that does not write a newline as one byte)."""
    if path == "-" or not _is_ascii_compatible(encoding):
        return None
    count, last = 0, b"\n"
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            count, last = count + block.count(b"\n"), block[-1:]
    return count + (last != b"\n")


def _decoded_lines(stream, name, encoding, ascii_compatible):
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


@contextlib.contextmanager
def result_writer(path=None, as_json=False):
    """A context giving ``write(input, result)``, which prints one line per result to stdout (flushed), or to
    ``path`` (complete or not at all: written, then renamed into place).

    ``as_json``: ``{"input": input, **result}`` per line; otherwise :func:`format_result`.
    """
    def line(item, result):
        return (json.dumps({"input": item, **result}, ensure_ascii=False) if as_json else format_result(result)) + "\n"

    if path and path != "-":
        with atomic_write(path, "w", encoding="utf-8") as f:
            yield lambda item, result: f.write(line(item, result))
        return

    def write(item, result):
        sys.stdout.write(line(item, result))
        sys.stdout.flush()
    yield write
