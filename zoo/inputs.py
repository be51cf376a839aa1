"""Inputs and outputs of ``oar run`` and ``oar infer``, the way a Unix tool reads and writes them.

- ``read_lines`` yields one input per line of a file or of stdin (``-``), blank
  lines included, decoded with the given encoding; a byte that does not decode
  is an ``InputError`` naming the file, the line and the byte offset.
- ``predict_in_order`` predicts through the task's one batching path
  (``Task.predict_iter``: batches grouped by length, bounded memory) and yields
  one result per input, in input order; a blank input gets an empty result
  without reaching the model.
- ``result_writer`` prints one line per result, readable or ``--json`` (one
  object that echoes the input), to stdout or to ``--output`` (written whole,
  then renamed into place).
"""
import collections
import contextlib
import json
import os
import sys

from framework.errors import InputError
from framework.progress import progress_bar
from framework.serialization import atomic_write

__all__ = ["read_lines", "count_lines", "predict_in_order", "format_result", "result_writer"]


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


def _is_blank(item):
    return isinstance(item, str) and not item.strip()


def predict_in_order(task, inputs, batch_size=64, total=None, where=None, **options):
    """Yield ``(input, result)`` for every input, in input order.

    ``inputs`` is any iterable (a stdin stream too). The non-blank ones go
    through the task's one batching path, ``task.predict_iter(inputs,
    batch_size, **options)`` (sorted by length within windows, bounded memory);
    a blank text input yields ``{}`` without reaching the model. A progress bar
    on stderr counts the inputs (``total`` when known). An ``InputError`` about
    one input is restated with ``where(n)``, the description of input ``n``
    (1-based, e.g. ``reviews.txt, line 7``).
    """
    if batch_size < 1:
        raise InputError(f"--batch_size must be at least 1, got {batch_size}")
    where = where or (lambda number: f"input {number}")
    pending = collections.deque()            # (position, input, blank) read by the model's stream, not yet answered
    answered = 0                             # non-blank inputs answered so far

    def non_blank():
        for position, item in enumerate(inputs):
            blank = _is_blank(item)
            pending.append((position, item, blank))
            if not blank:
                yield item

    def position_of(index):
        """The position in ``inputs`` of the ``index``-th non-blank input (0-based), one still pending."""
        rank = index - answered
        for position, _, blank in pending:
            if not blank:
                if rank == 0:
                    return position
                rank -= 1

    with progress_bar(total=total, desc="predicting", unit="input") as bar:
        results = task.predict_iter(non_blank(), batch_size, **options)
        while True:
            try:
                result = next(results)
            except StopIteration:
                break
            except InputError as err:
                if err.index is None:
                    raise
                raise err.located(where(position_of(err.index) + 1)) from None
            while pending[0][2]:
                _, item, _ = pending.popleft()
                yield item, {}
                bar.update(1)
            _, item, _ = pending.popleft()
            answered += 1
            yield item, result
            bar.update(1)
        for _, item, _ in pending:           # blank lines after the last non-blank one
            yield item, {}
        bar.update(len(pending))


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
