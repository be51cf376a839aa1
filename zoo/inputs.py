"""Inputs and outputs of ``oar run`` and ``oar infer``, the way a Unix tool reads and writes them.

- ``read_lines`` yields one input per line of a file, a FIFO, a URL or stdin
  (``-``), blank lines included, decoded with the given encoding; a line ends
  at ``\\n`` only, in every encoding; a byte that does not decode is an
  ``InputError`` naming the file, the line and the byte offset.
- ``predict_in_order`` predicts through the task's one batching path
  (``Task.predict_iter``: batches grouped by length, bounded memory) and yields
  one result per input, in input order; a blank input gets an empty result
  without reaching the model.
- ``result_writer`` prints one line per result, readable or ``--json`` (one
  object that echoes the input), to stdout or to ``--output``: a file is
  written whole, then renamed into place; a FIFO or a character device is
  written into, never replaced; anything else is one ``OutputError`` line.
"""
import codecs
import collections
import contextlib
import json
import os
import re
import stat
import sys

from framework.errors import InputError, UserError
from framework.io.remote import is_url, open_file, safe_url
from framework.progress import progress_bar
from framework.serialization import atomic_write

__all__ = ["OutputError", "is_ascii_compatible", "read_lines", "count_lines", "predict_in_order", "format_result",
           "result_writer", "output_kind"]


class OutputError(UserError, OSError):
    """An ``--output`` that cannot take the results as asked (a folder, a socket, results already there)."""


def is_ascii_compatible(encoding):
    """True when ``encoding`` writes a newline as the byte ``\\n`` (so a file splits into lines as bytes)."""
    try:
        return "\n".encode(encoding) == b"\n" and "a".encode(encoding) == b"a"
    except LookupError:
        raise InputError(f"--encoding {encoding}: unknown encoding (e.g. utf-8, gbk, gb18030, utf-16)") from None


def _decode_error(name, line_number, offset, err, encoding):
    byte = err.object[err.start:err.start + 1].hex()
    return InputError(f"{name}, line {line_number}: byte 0x{byte} at offset {offset} is not valid {encoding}; "
                      f"give the file's encoding with --encoding (e.g. --encoding gbk)")


def _open_input(path):
    """A binary stream of the input file ``path``: a regular file, a FIFO or another readable stream (what
    ``<(cmd)`` gives), or a URL (read streaming through :mod:`framework.io.remote`)."""
    if is_url(path):
        return open_file(path, "rb", what="input file")
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise InputError(f"input file not found: {path}") from None
    except OSError as err:
        raise InputError(f"input file {path}: {err.strerror}") from None
    if stat.S_ISDIR(mode):
        raise InputError(f"input file {path} is a directory; give a text file with one input per line")
    if stat.S_ISSOCK(mode):
        raise InputError(f"input file {path} is a socket; give a file, a FIFO or - (stdin)")
    try:
        return open(path, "rb")
    except OSError as err:
        raise InputError(f"input file {path}: {err.strerror}") from None


def read_lines(path, encoding="utf-8"):
    """The lines of the text file ``path`` (``-``: stdin; a FIFO; a URL) without their line endings, as an
    iterator.

    The path and the encoding are checked now (an ``InputError`` before any
    work); the lines are read and decoded as they are consumed. A line ends at
    ``\\n`` (or ``\\r\\n``) only, in every encoding: U+2028, U+2029, form feeds and
    lone ``\\r`` stay inside their line. Blank lines are yielded too (as ``""``),
    so outputs line up with inputs. A byte-order mark at the start is dropped.
    """
    ascii_compatible = is_ascii_compatible(encoding)
    stream = sys.stdin.buffer if path == "-" else _open_input(path)
    name = "stdin" if path == "-" else safe_url(path)
    lines = _byte_lines if ascii_compatible else _wide_lines
    return _closing(lines(stream, name, encoding), stream)


def count_lines(path, encoding="utf-8"):
    """How many lines :func:`read_lines` gives for ``path``, counted on the bytes; None for stdin, a URL, a
    FIFO or another stream (counting would consume it), or an encoding that does not write a newline as one
    byte."""
    if path == "-" or is_url(path) or not is_ascii_compatible(encoding):
        return None
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return None
    except OSError:
        return None
    count, last = 0, b"\n"
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            count, last = count + block.count(b"\n"), block[-1:]
    return count + (last != b"\n")


def _closing(lines, stream):
    try:
        yield from lines
    finally:
        if stream is not sys.stdin.buffer:
            stream.close()


def _byte_lines(stream, name, encoding):
    """Lines of an encoding that writes ``\\n`` as that byte: split on the bytes, each line decoded alone."""
    offset = 0
    for number, raw in enumerate(stream, 1):
        try:
            line = raw.decode(encoding)
        except UnicodeDecodeError as err:
            raise _decode_error(name, number, offset + err.start, err, encoding) from None
        offset += len(raw)
        if number == 1:
            line = line.lstrip("\ufeff")
        yield _without_ending(line)


def _wide_lines(stream, name, encoding):
    """Lines of UTF-16/32 (any encoding): decoded incrementally, split on ``\\n`` alone (never ``splitlines``)."""
    decoder = codecs.getincrementaldecoder(encoding)()
    pending, number, fed, first = "", 1, 0, True
    while True:
        block = stream.read(1 << 20)
        fed += len(block)
        try:
            text = decoder.decode(block, final=not block)
        except UnicodeDecodeError as err:
            offset = fed - len(err.object) + err.start
            raise _decode_error(name, number + pending.count("\n"), offset, err, encoding) from None
        if first and text:
            text, first = text.lstrip("\ufeff"), False
        *lines, pending = (pending + text).split("\n")
        for line in lines:
            yield _without_ending(line)
        number += len(lines)
        if not block:
            break
    if pending:
        yield _without_ending(pending)


def _without_ending(line):
    """``line`` without its ``\\n`` and the ``\\r`` before it (one of each)."""
    line = line[:-1] if line.endswith("\n") else line
    return line[:-1] if line.endswith("\r") else line


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

    LAC: ``word/tag`` pairs separated by spaces (words never hold spaces), or the words alone for a model
    that answers words only (``lac_seg``);
    detection: one line per box, ``label score x1,y1,x2,y2`` (an image with none: an empty line);
    classification: ``label<TAB>score``; top-k: ``label prob, …`` (video
    models with motion and shape groups: ``motion: … | shape: …``); an empty
    result (a blank input): an empty line; anything else: its JSON.
    """
    if not result:
        return ""
    if "boxes" in result and "labels" in result and "scores" in result:
        return "\n".join(f"{label} {score:.3f} {','.join(f'{v:.1f}' for v in box)}"
                         for box, label, score in zip(result["boxes"], result["labels"], result["scores"]))
    if "words" in result and "tags" in result:
        return " ".join(f"{w}/{t}" for w, t in zip(result["words"], result["tags"]))
    if list(result) == ["words"]:
        return " ".join(result["words"])
    groups = [key for key in result if key.endswith("_topk")]
    if groups:
        return " | ".join(f"{key[:-len('_topk')]}: {_format_topk(result[key])}" for key in groups)
    if "topk" in result:
        return _format_topk(result["topk"])
    if "label" in result and "score" in result:
        return f"{result['label']}\t{result['score']:.4f}"
    return json.dumps(result, ensure_ascii=False)


def output_kind(path):
    """What ``--output path`` is: ``"file"`` (a regular file, or nothing yet: written whole, then renamed into
    place; through a link, the file it names is replaced and the link kept) or ``"stream"`` (a character
    device such as ``/dev/null``, a FIFO, or a link to a process's open file such as ``/dev/stdout``: written
    into as it is, never replaced). A folder, a socket, a block device or a URL is an :class:`OutputError`."""
    if is_url(path):
        raise OutputError(f"--output {safe_url(path)}: oar run writes a local file; --engine ray writes to a URL")
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return "file"
    except OSError as err:
        raise OutputError(f"--output {path}: {err.strerror}") from None
    if stat.S_ISCHR(mode) or stat.S_ISFIFO(mode) or (stat.S_ISREG(mode) and _open_descriptor(path) is not None):
        return "stream"
    if stat.S_ISREG(mode):
        return "file"
    kind = "a folder" if stat.S_ISDIR(mode) else "a socket" if stat.S_ISSOCK(mode) else "a block device" \
        if stat.S_ISBLK(mode) else "not a regular file"
    raise OutputError(f"--output {path} is {kind}; give a file, a FIFO or a character device (e.g. /dev/stdout)")


def _open_descriptor(path):
    """The descriptor number ``N`` when ``path`` reaches its file through a link to ``/proc/self/fd/N`` or
    ``/dev/fd/N`` (``/dev/stdout`` …: this process's own open file), else None."""
    for _ in range(40):
        if not os.path.islink(path):
            return None
        target = os.path.join(os.path.dirname(path), os.readlink(path))
        match = re.fullmatch(r"/(?:proc/self|dev)/fd/(\d+)", target)
        if match:
            return int(match.group(1))
        path = target
    return None


def _open_stream(path):
    """``path`` (a FIFO, a device, a link to an open descriptor) opened to write text into, never replaced: an
    open descriptor is shared (so ``/dev/stdout`` continues this process's stdout where it is)."""
    descriptor = _open_descriptor(path)
    if descriptor is not None:
        return os.fdopen(os.dup(descriptor), "w", encoding="utf-8")
    return open(path, "a", encoding="utf-8")


@contextlib.contextmanager
def result_writer(path=None, as_json=False):
    """A context giving ``write(input, result)``, which prints one line per result to stdout (flushed), or to
    ``path``: a file is complete or not there at all (written, then renamed into place); a FIFO or a
    character device (``/dev/null``, a link to ``/dev/stdout``) is written into line by line, never replaced
    (see :func:`output_kind`).

    ``as_json``: ``{"input": input, **result}`` per line; otherwise :func:`format_result`.
    """
    def line(item, result):
        return (json.dumps({"input": item, **result}, ensure_ascii=False) if as_json else format_result(result)) + "\n"

    if path and path != "-":
        if output_kind(path) == "stream":
            with _open_stream(path) as f:
                yield lambda item, result: f.write(line(item, result)) and f.flush()
            return
        with atomic_write(os.path.realpath(path), "w", encoding="utf-8") as f:
            yield lambda item, result: f.write(line(item, result))
        return

    def write(item, result):
        sys.stdout.write(line(item, result))
        sys.stdout.flush()
    yield write
