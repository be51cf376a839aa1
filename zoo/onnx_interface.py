"""What a bare ONNX Runtime user needs beside an exported ``model.onnx``: ``onnx_interface.json``.

``model.onnx`` holds only the network. What turns raw inputs into its inputs
and its outputs into results lives in the task: the text normalisation, the
tokeniser and vocabulary with its special ids, the lexicon features of LAC,
the frame sampling and image transforms of video, the softmax, threshold or
CRF Viterbi after the network, and the label names. :func:`describe` reads all
of it from the task object and the traced program (never from a per-model
table) into one JSON-ready dict; :func:`write_interface` writes it into an
export directory as :data:`INTERFACE_FILE`. ``docs/ONNX.md`` shows how to use
it with ONNX Runtime and NumPy alone.

Layout (``version`` 1)::

    {"format": "oar.onnx_interface", "version": 1, "model": "model.onnx", "task": task kind,
     "inputs":  [{"name", "dtype", "shape" (ints and axis names), "meaning"}],
     "dynamic_axes": {axis name: ["input:axis", ...]},
     "outputs": [{"name", "dtype", "shape", "kind": "logits"|"scores"|"emissions", "then": what the task does}],
     "labels": [names in id order] or null,
     "preprocess": {...},   # per task family: "text", "lexicon", "video", "image", "features"
     "postprocess": {...}}  # "softmax", "threshold", "viterbi", "average_views", "sigmoid", ...

Every file named in it is relative to the export directory.
"""
import json
import os

import numpy

from framework.jit import StaticLayer
from framework.onnx.runtime import name_outputs, output_leaves
from framework.serialization import atomic_write

__all__ = ["INTERFACE_FILE", "FORMAT", "VERSION", "describe", "write_interface"]

INTERFACE_FILE = "onnx_interface.json"
FORMAT = "oar.onnx_interface"
VERSION = 1
_ASSETS = "assets.json"


# ---- generic parts: inputs, outputs, JSON -----------------------------------------------------------------

def _plain(value):
    """``value`` with NumPy arrays and scalars, tuples and sets made JSON types (lists, ints, floats)."""
    if isinstance(value, numpy.ndarray):
        return value.tolist()
    if isinstance(value, numpy.generic):
        return value.item()
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return value


def _settings(obj):
    """``{"type": class name, public attribute: value, ...}`` of a transform or sampler object."""
    return {"type": type(obj).__name__,
            **{k: _plain(v) for k, v in vars(obj).items() if not k.startswith("_") and not callable(v)}}


def _synthetic(program, sizes):
    """Inputs of ``program`` at ``sizes`` ({axis name: int}): integers 1 (a valid id and length), floats 0."""
    return {spec.name: numpy.full([sizes[n] if isinstance(n, str) else n for n in spec.shape],
                                  1 if numpy.dtype(spec.dtype).kind in "iu" else 0, dtype=spec.dtype)
            for spec in program.inputs}


def _output_specs(program):
    """``[{"name", "dtype", "shape"}]`` of the program's outputs in ONNX order; an axis that follows one input
    axis name is named after it, found by replaying the program at two sets of sizes."""
    symbols = program.symbols
    first = {s: 2 + k for k, s in enumerate(symbols)}
    second = {s: 3 + len(symbols) + k for k, s in enumerate(symbols)}
    tree, _ = name_outputs(program.outputs)
    runs = [dict(output_leaves(tree, program(**_synthetic(program, sizes)))) for sizes in (first, second)]
    specs = []
    for name, array in runs[0].items():
        other = runs[1][name]
        shape = []
        for a, b in zip(array.shape, other.shape):
            named = [s for s in symbols if (first[s], second[s]) == (a, b)]
            shape.append(a if a == b else named[0] if len(named) == 1 else None)
        specs.append({"name": name, "dtype": numpy.dtype(array.dtype).name, "shape": shape})
    return specs


def _inputs(program, meanings):
    return [{"name": s.name, "dtype": numpy.dtype(s.dtype).name, "shape": list(s.shape),
             "meaning": meanings.get(s.name)} for s in program.inputs]


def _dynamic_axes(program):
    axes = {}
    for spec in program.inputs:
        for axis, size in enumerate(spec.shape):
            if isinstance(size, str):
                axes.setdefault(size, []).append(f"{spec.name}:{axis}")
    return axes


def _assets(directory):
    """``{config key: export-relative file or list of files}`` of the copies ``assets.json`` records."""
    path = os.path.join(directory, _ASSETS)
    if not os.path.isfile(path):
        return {}
    with open(path, encoding="utf-8") as f:
        return {key: entry["value"] for key, entry in json.load(f).items()}


def _layer(task):
    return task.model.layer if isinstance(task.model, StaticLayer) else task.model


# ---- text -------------------------------------------------------------------------------------------------

def _code_point_map(function):
    """The characters ``function`` (str -> str of the same length) changes, as runs
    ``[[first, last, first's replacement]]`` of code points with one offset each."""
    points = numpy.arange(0x110000, dtype=numpy.int64)
    mapped = numpy.frombuffer(function("".join(map(chr, points.tolist()))).encode("utf-32-le", "surrogatepass"),
                              dtype=numpy.uint32).astype(numpy.int64)
    changed = numpy.flatnonzero(mapped != points)
    runs = []
    for point in changed.tolist():
        if runs and runs[-1][1] == point - 1 and mapped[point] - point == runs[-1][2] - runs[-1][0]:
            runs[-1][1] = point
        else:
            runs.append([point, point, int(mapped[point])])
    return runs


def _vocabulary(vocab, file):
    return {"file": file, "format": "UTF-8, one token per line, line i (from 0) is id i", "size": len(vocab),
            "pad": {"token": vocab.pad, "id": vocab.PAD_ID}, "unk": {"token": vocab.unk, "id": vocab.UNK_ID}}


def _in_model(program):
    """The n-gram ids the network computes itself from the ids (nothing to do before the model)."""
    from framework.ops.common import HashedNgrams
    return [{"op": "HashedNgrams", "orders": list(n.attrs["orders"]), "buckets": int(n.attrs["buckets"]),
             "ending": bool(n.attrs.get("ending", False)), "where": "inside model.onnx, from the ids"}
            for n in program.nodes if n.cls is HashedNgrams]


def _text_pipeline(task, assets, program, vocab_key):
    """The sentiment and matching tasks' shared text pipeline (:class:`nlp.common.TokenEncoder`)."""
    from nlp.common import CHARS_PER_TOKEN
    from nlp.data.text import full_to_half
    tokenizer = task.tokenizer
    encoder = task.collate_fn
    kinds = {"char": "one token per character of the normalised text; whitespace characters (str.isspace) "
                     "are dropped",
             "lac_word": "the words of oar's LAC tagger running Baidu's official model (not in this export)"}
    kind = tokenizer.signature.split("-")[0]
    described = {"kind": kind, "how": kinds.get(kind)}
    if getattr(tokenizer, "model_path", None):
        described.update(model=assets.get("task.tokenizer.model"),
                         how="SentencePiece pieces of the normalised text, dropping pieces that are empty after "
                             "strip() and the lone '\u2581'")
    return {"normalization": {"map": _code_point_map(full_to_half), "then": "str.lower()",
                              "note": "only these characters change (not NFKC)"},
            "tokenizer": described,
            "vocabulary": _vocabulary(task.vocab, assets.get(vocab_key)),
            "max_chars": encoder.max_len * CHARS_PER_TOKEN, "max_tokens": encoder.max_len,
            "order": "cut the text to max_chars characters, normalise, tokenise, keep the first max_tokens "
                     "tokens, map them to ids (unknown tokens: the unk id); no token at all: one unk id",
            "padding": "rows padded with the pad id to the longest row of the call",
            "in_model": _in_model(program)}


def _sentiment(task, program, export):
    inputs = {"ids": "token ids, one row per text, padded with the pad id", "lengths": "tokens per row (>= 1)"}
    return {"meanings": inputs, "kind": "logits", "then": "softmax over the last axis", "labels": list(task.label_names),
            "preprocess": {"text": _text_pipeline(task, export["assets"], program, "task.vocab")},
            "postprocess": {"softmax": {"axis": -1},
                            "result": {"label": "labels[argmax]", "score": "the probability of that label"}}}


def _matching(task, program, export):
    side = "token ids of the {} texts, padded with the pad id; both sides padded to one width (the longest " \
           "text of either side in the call)"
    inputs = {"a_ids": side.format("first"), "a_lengths": "tokens per first text (>= 1)",
              "b_ids": side.format("second"), "b_lengths": "tokens per second text (>= 1)"}
    pointwise = _layer(task).head == "pointwise"
    post = {"threshold": task.threshold,
            "result": {"score": "as above", "label": "1 when score >= threshold, else 0"}}
    if pointwise:
        post["softmax"] = {"axis": -1, "score": "the probability of column 1 (match)"}
    return {"meanings": inputs, "kind": "logits" if pointwise else "scores",
            "then": "softmax over the last axis; the score is column 1" if pointwise
            else "the score is the output itself (a cosine in [-1, 1])",
            "labels": None, "preprocess": {"text": _text_pipeline(task, export["assets"], program, "task.vocab")},
            "postprocess": post}


def _transition(task, directory, weights):
    """Where the CRF transition (K+2, K) lies: an array of the export's weights file, or its values inline."""
    layer = _layer(task)
    name = next(n for n, p in layer.named_parameters() if p is layer.crf.transition)
    table = layer.crf.transition.numpy()
    if weights and weights.endswith(".npz"):
        with numpy.load(os.path.join(directory, weights), allow_pickle=False) as arrays:
            key = next((k for k in arrays.files if k.split("/")[-1] == name
                        and numpy.array_equal(arrays[k].astype(table.dtype), table)), None)
        if key is not None:
            return {"file": weights, "array": key, "dtype": "read it as float32"}
    return {"values": table.tolist()}


def _lexical(task, program, export):
    from nlp.data.text import full_to_half
    from nlp.data.peoples_daily import TAGSET
    from nlp.lac.preprocess import CharPreprocessor
    tags = list(task.tag_names or TAGSET.names)
    assets = export["assets"]
    inputs = {"tokens": "the ids of preprocess.text, one row per text, padded with 0",
              "lengths": "characters per row (>= 1)",
              "lexicon": "lexicon features per character (preprocess.lexicon), 0 at padded positions"}
    pre = {}
    if isinstance(task.preprocessor, CharPreprocessor):
        pre["text"] = {"normalization": {"map": _code_point_map(full_to_half), "then": None,
                                         "note": "only these characters change (not NFKC, no lower-casing)"},
                       "tokenizer": {"kind": "char", "how": "one id per character, whitespace included"},
                       "vocabulary": _vocabulary(task.preprocessor.vocab, assets.get("task.vocab_file")),
                       "max_chunk_len": task.max_chunk_len, "in_model": _in_model(program)}
    else:
        pre["text"] = {"tokenizer": {"kind": type(task.preprocessor).__name__,
                                     "how": "Baidu LAC's mixed word and character ids (its word.dic, q2b.dic "
                                            "and coarse segmentation), not in this export"}}
    if task.lexicon is not None:
        files = assets.get("task.lexicon_file")
        pre["lexicon"] = {
            "files": [files] if isinstance(files, str) else files,
            "max_len": [block.max_len for block in task.lexicon.blocks],
            "words": "one word per line; normalised with preprocess.text.normalization; a word with a "
                     "character outside the vocabulary, or shorter than 2 or longer than max_len, never matches",
            "features": "per lexicon, in file order, 3 * max_len - 4 values in {0, 1} per character: "
                        "start k (k = 2..max_len: a word of k characters starts here), end k (2..max_len: one "
                        "ends here), middle k (3..max_len: the character lies strictly inside one)"}
    allowed = task.allowed_transitions() if task.constrain_decoding else None
    return {"meanings": inputs, "kind": "emissions",
            "then": "CRF Viterbi decoding with the transition (postprocess.viterbi), one tag per character",
            "labels": tags, "preprocess": pre,
            "postprocess": {"viterbi": {
                "transition": _transition(task, export["directory"], export["weights"]),
                "layout": "(K+2, K): row 0 start scores, row 1 stop scores, rows 2.. score[from, to]",
                "allowed": None if allowed is None else ["".join("1" if a else "0" for a in row) for row in allowed],
                "allowed_layout": "one string per transition row, '0' at a forbidden (first, from->to or last) "
                                  "tag; null: every path",
                "ties": "the lowest tag id"},
                "words": {"whitespace": task.whitespace,
                          "rule": getattr(task, "word_rule", None) or (
                              "a word starts at the first character, at every character whose tag ends in "
                              "B or S and (whitespace 'split') after whitespace; whitespace belongs to no "
                              "word under 'split'; a word's tag is its last character's tag without its "
                              "last two characters ('n-B' -> 'n', 'O' -> '')")}}}


def _frames(loader):
    return {"decode": "every frame of the first video stream in presentation order, RGB uint8 (H, W, 3)",
            "sampler": _settings(loader.sampler),
            "transforms": [_settings(t) for t in loader.transform.transforms]}


def _video(task, program, export):
    return {"meanings": {s.name: "clips, float32, after preprocess.video" for s in program.inputs},
            "kind": "logits", "then": "softmax over the classes, then the mean over the views of a video",
            "labels": task.class_names, "preprocess": {"video": _frames(task.loader)},
            "postprocess": {"softmax": {"axis": -1}, "average_views": True,
                            "result": {"topk": "[[label, probability], ...], best first"}}}


def _features(task, program, export):
    return {"meanings": {s.name: "per-frame features made by the task's image backbone (not in model.onnx)"
                         if s.dtype.kind == "f" else "frames per video" for s in program.inputs},
            "kind": "logits", "then": "sigmoid per class (multi-label)", "labels": task.class_names,
            "preprocess": {"features": {"modalities": task.modalities, "frames": task.num_frames,
                                        "frame_size": task.frame_size}},
            "postprocess": {"sigmoid": True}}


def _image(task, program, export):
    return {"meanings": {s.name: "images, float32, after preprocess.image" for s in program.inputs},
            "kind": "logits", "then": "softmax over the classes", "labels": task.class_names,
            "preprocess": {"image": {"decode": "RGB uint8 (H, W, 3)",
                                     "transforms": [_settings(t) for t in task.transforms.transforms]}},
            "postprocess": {"softmax": {"axis": -1}}}


# Task class name -> its describer (a subclass takes its nearest listed base's); a task not listed gets the
# generic part only. A lexical task may describe its own word rule (``word_rule``, a str).
_DESCRIBERS = {"LexicalAnalysis": _lexical, "SentimentClassification": _sentiment, "TextMatching": _matching,
               "VideoRecognition": _video, "FeatureRecognition": _features, "ImageClassification": _image}


def describe(task, program, task_kind, directory, weights=None):
    """The interface of an export (module docstring) as a JSON-ready dict.

    Args:
        task: the loaded zoo task the export was made from.
        program: its traced :class:`~framework.jit.Program` (inputs (names, dtypes, shapes with axis
            names), outputs; replayed twice on small synthetic inputs to name the output axes).
        task_kind: the zoo task's name (``"sentiment"``, ...), recorded as ``task``.
        directory: the export directory, whose ``assets.json`` names the copies of the vocabularies.
        weights: the export's weights file (relative), where LAC's CRF transition is found.
    """
    export = {"assets": _assets(directory), "directory": directory, "weights": weights}
    describer = next((_DESCRIBERS[c.__name__] for c in type(task).__mro__ if c.__name__ in _DESCRIBERS), None)
    if describer is not None:
        part = describer(task, program, export)
    else:
        part = {"meanings": {}, "kind": None, "then": None, "labels": None, "preprocess": None, "postprocess": None}
    outputs = [{**spec, "kind": part["kind"], "then": part["then"]} for spec in _output_specs(program)]
    return {"format": FORMAT, "version": VERSION, "model": "model.onnx", "task": task_kind,
            "inputs": _inputs(program, part["meanings"]), "dynamic_axes": _dynamic_axes(program),
            "outputs": outputs, "labels": part["labels"], "preprocess": part["preprocess"],
            "postprocess": part["postprocess"]}


def write_interface(task, program, task_kind, directory, weights=None):
    """Write :func:`describe`'s dict as ``directory/onnx_interface.json`` (atomically); returns its path."""
    path = os.path.join(directory, INTERFACE_FILE)
    with atomic_write(path) as f:
        json.dump(describe(task, program, task_kind, directory, weights), f, ensure_ascii=False, indent=1)
        f.write("\n")
    return path
