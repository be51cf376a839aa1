"""What ``oar run`` and ``oar infer`` share: the input and output flags, reading the inputs, writing one line
per input."""
import inspect
import os

from framework.serialization import atomic_write

from ..inputs import count_lines, predict_in_order, read_lines, result_writer
from ..usage import UsageError

__all__ = ["input_arguments", "inputs", "predict_options", "predict_and_write", "check_user_dict", "use_user_dict"]


def input_arguments(parser):
    """The input and output flags of ``oar run`` and ``oar infer``."""
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--input_text", "--input", nargs="+", metavar="TEXT",
                        help="texts to predict on (a matching pair: 'text_a<TAB>text_b')")
    source.add_argument("--input_file", metavar="FILE",
                        help="a text file with one input per line; - reads stdin (one output line per input line)")
    source.add_argument("--input_path", nargs="+", metavar="PATH", help="files to predict on (videos, images)")
    parser.add_argument("--json", action="store_true", help="one JSON object per input, echoing it as \"input\"")
    parser.add_argument("--output", metavar="FILE", help="write the results here instead of stdout")
    parser.add_argument("--batch_size", type=int, default=64, help="inputs per batch, grouped by length (default 64)")
    parser.add_argument("--top_k", type=int, help="classes listed per input (classification models)")
    parser.add_argument("--encoding", default="utf-8", help="encoding of --input_file (default utf-8; e.g. gbk)")


def inputs(args):
    """``(iterable of inputs, count or None, where)`` from the input flags; ``where(n)`` names input ``n``."""
    if args.input_file:
        name = "stdin" if args.input_file == "-" else args.input_file
        lines = read_lines(args.input_file, args.encoding)         # checks the file now, reads it as predicted
        return lines, count_lines(args.input_file, args.encoding), lambda n: f"{name}, line {n}"
    flag = "--input_text" if args.input_text else "--input_path"
    given = args.input_text or args.input_path
    return given, len(given), lambda n: f"{flag} value {n} ({given[n - 1]!r})"


def check_user_dict(card, args):
    """Refuse ``--user_dict`` before a model loads: for a model that is not a lexical analysis one, and with
    ``--engine ray`` (its actors load the model themselves)."""
    path = getattr(args, "user_dict", None)
    if path is None:
        return
    if card.task != "lexical_analysis":
        raise UsageError(f"{card.name} is a {card.task} model; --user_dict is for lexical analysis models")
    if args.engine == "ray":
        raise UsageError("--user_dict does not go with --engine ray")


def use_user_dict(task, args):
    """Give ``task`` the user dictionary of ``--user_dict`` (LAC's format, :mod:`nlp.lac.customization`); a model
    that applies none (``lac_small``) is a usage error."""
    from nlp.lac.small import NoUserDictionaryError
    if getattr(args, "user_dict", None) is None:
        return
    try:
        task.load_customization(args.user_dict)
    except NoUserDictionaryError as err:
        raise UsageError(f"--user_dict: {err}") from None


def predict_options(task, args, model_name):
    """Keyword options for ``task.predict`` from the flags (``top_k``, refused when the model takes none), and
    for lexical analysis ``whitespace="split"`` in the ``word/TAG`` text output, which splits on spaces
    (``--json`` keeps the model's own rule)."""
    accepted = inspect.signature(task.predict).parameters
    options = {"whitespace": "split"} if "whitespace" in accepted and not args.json else {}
    threshold = getattr(args, "score_threshold", None)
    if threshold is not None:
        if "score_threshold" not in accepted:
            raise UsageError(f"{model_name} is not a detection model; --score_threshold is for detection models")
        if not 0 <= threshold <= 1:
            raise UsageError(f"--score_threshold must be in [0, 1], got {threshold}")
        options["score_threshold"] = threshold
    if args.top_k is None:
        return options
    if "top_k" not in accepted:
        raise UsageError(f"{model_name} answers one label per input; --top_k is for models that rank classes")
    if args.top_k < 1:
        raise UsageError(f"--top_k must be at least 1, got {args.top_k}")
    return {**options, "top_k": args.top_k}


def predict_and_write(task, args, model_name, given):
    """Predict every input of ``given`` (from :func:`inputs`) and write one line each."""
    items, count, where = given
    options = predict_options(task, args, model_name)
    draw_dir = getattr(args, "draw_dir", None)
    if draw_dir and not hasattr(task, "draw"):
        raise UsageError(f"{model_name} draws nothing; --output_dir is for detection models")
    with result_writer(args.output, as_json=args.json) as write:
        for n, (item, result) in enumerate(predict_in_order(task, items, args.batch_size, total=count, where=where,
                                                            **options)):
            write(item, result)
            if draw_dir:
                _write_drawing(task, draw_dir, n, item, result)


def _write_drawing(task, folder, n, item, result):
    """Write input ``n`` with its boxes drawn as ``folder/<its file name>`` (``<n>.jpg`` for bytes or arrays)."""
    import cv2
    os.makedirs(folder, exist_ok=True)
    name = os.path.basename(os.fspath(item)) if isinstance(item, (str, os.PathLike)) else f"{n:06d}.jpg"
    extension = os.path.splitext(name)[1].lower()
    if extension not in (".jpg", ".jpeg", ".png", ".bmp", ".webp"):
        name, extension = name + ".jpg", ".jpg"
    done, encoded = cv2.imencode(extension, cv2.cvtColor(task.draw(item, result), cv2.COLOR_RGB2BGR))
    if not done:
        raise UsageError(f"--output_dir: cannot encode {name}")
    with atomic_write(os.path.join(folder, name), "wb") as f:
        f.write(encoded.tobytes())
