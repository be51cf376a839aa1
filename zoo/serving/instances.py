"""Request bodies -> the inputs ``task.predict`` takes, and every way a client's request can be wrong.

Each mistake raises :class:`RequestError` with an HTTP status and a
``detail`` that names the field (``instances[3]``, ``text``, ``body``). The
instances of a model follow its task (the task table's ``kind``, :mod:`zoo.tasks`):

- ``text`` (lexical analysis, sentiment): a string of at most ``max_text_len`` characters;
- ``pair`` (matching): ``[text_a, text_b]``;
- ``file`` (video, image): ``{"b64": "<base64 of the file's bytes>"}``, written to a scratch file for the
  task to read, or ``{"path": "…"}``, a file under the server's ``--allow_path`` folder (nothing else).

An answer names only what the client sent: a message about a file says the
field of a ``b64`` instance or the path string the client gave, never the
server's path of the file (:meth:`ScratchFiles.describe`, :func:`hide_paths`).
"""
import base64
import binascii
import json
import os
import re
import tempfile


__all__ = ["RequestError", "ScratchFiles", "invalid", "parse_body", "read_instances", "paddlehub_instances",
           "decode_instances"]


class RequestError(Exception):
    """A request the server refuses: ``status`` (400, 404, 413, 503, …), a short ``error`` and a ``detail``."""

    def __init__(self, status, error, detail, headers=None):
        super().__init__(detail)
        self.status, self.error, self.detail, self.headers = status, error, detail, headers or {}

    def body(self):
        """The JSON body every refusal answers with."""
        return {"error": self.error, "detail": self.detail}


def invalid(field, message):
    """A 400 about ``field`` of the request."""
    return RequestError(400, "invalid input", f"{field}: {message}")


def parse_body(raw):
    """The JSON object of a request body (bytes); anything else is a 400 naming ``body``."""
    try:
        body = json.loads(raw)
    except (ValueError, RecursionError) as err:     # UnicodeDecodeError is a ValueError; very deep nesting recurses
        raise invalid("body", f"not JSON ({type(err).__name__}: {str(err)[:200]})") from None
    if not isinstance(body, dict):
        raise invalid("body", f"must be a JSON object, got {_json_type(body)}")
    return body


def _json_type(value):
    for kind, name in ((bool, "a boolean"), (str, "a string"), (dict, "an object"), (list, "a list"),
                       (int, "a number"), (float, "a number")):
        if isinstance(value, kind):
            return name
    return "null"


def _checked_list(value, field, max_instances):
    if not isinstance(value, list):
        raise invalid(field, f"must be a list of instances, got {_json_type(value)}")
    if not value:
        raise invalid(field, "is empty; give at least one instance")
    if len(value) > max_instances:
        raise invalid(field, f"holds {len(value)} instances, more than the server's limit of {max_instances}")
    return value


def read_instances(body, max_instances):
    """The ``instances`` list of a v1 ``:predict`` body."""
    if "instances" not in body:
        raise invalid("instances", "missing; send {\"instances\": [...]}")
    return _checked_list(body["instances"], "instances", max_instances)


def paddlehub_instances(body, kind, max_instances):
    """The instances of a PaddleHub-style body: ``{"text": [...]}``; for matching also ``{"text_1": [...],
    "text_2": [...]}`` (paired in order). Models that read files take the v1 route only."""
    if kind == "file":
        raise invalid("text", "this model reads video or image files; POST {\"instances\": [{\"b64\": …}]} "
                              "to /v1/models/NAME:predict")
    if kind == "pair" and "text" not in body and ("text_1" in body or "text_2" in body):
        first, second = (_checked_list(body.get(key), key, max_instances) for key in ("text_1", "text_2"))
        if len(first) != len(second):
            raise invalid("text_2", f"holds {len(second)} texts, text_1 holds {len(first)}; they pair in order")
        return [list(pair) for pair in zip(first, second)]
    if "text" not in body:
        raise invalid("text", "missing; send {\"text\": [...]}")
    return _checked_list(body["text"], "text", max_instances)


def _checked_text(value, field, max_len):
    if not isinstance(value, str):
        raise invalid(field, f"must be a string (a text), got {_json_type(value)}")
    if len(value) > max_len:
        raise invalid(field, f"is {len(value)} characters long, over the limit of {max_len}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise invalid(field, "is not valid Unicode (a lone surrogate escape such as \\ud800)") from None
    return value


def _checked_pair(value, field, max_len):
    if not isinstance(value, list) or len(value) != 2:
        got = f"a list of {len(value)}" if isinstance(value, list) else _json_type(value)
        raise invalid(field, f"must be a pair [text_a, text_b], got {got}")
    return [_checked_text(text, f"{field}[{i}]", max_len) for i, text in enumerate(value)]


def hide_paths(message, shown):
    """``message`` with each server path in ``shown`` (``{server path: what to show instead}``) replaced, the
    longest first and in one pass, so a replacement is never itself replaced."""
    if not shown:
        return message
    pattern = re.compile("|".join(re.escape(path) for path in sorted(shown, key=len, reverse=True)))
    return pattern.sub(lambda found: shown[found.group(0)], message)


class ScratchFiles:
    """Files written for one request's ``b64`` instances (:meth:`remove` deletes them), and what an answer
    shows in place of each server path the request's inputs have.

    ``names`` maps each file's path to what the client sent for it (the field of a ``b64`` instance, the path
    string of a ``path`` instance); ``hidden`` maps the server's own folders to words (the allowed folder, the
    scratch folder, the repository), so error messages name the client's field or path, never a server path.
    """

    def __init__(self, folder, hidden=None):
        self.folder, self.names, self.hidden = folder, {}, dict(hidden or {})

    def write(self, data, field):
        """Write ``data`` to a new file in the folder; returns its path."""
        handle, path = tempfile.mkstemp(dir=self.folder)
        with os.fdopen(handle, "wb") as f:
            f.write(data)
        self.names[path] = field
        self._written = getattr(self, "_written", []) + [path]
        return path

    def show(self, path, given):
        """Name the server path ``path`` as ``given`` (what the client sent) in messages."""
        self.names[path] = given

    def describe(self, message):
        """``message`` with every server path replaced by what the client sent for it, and the server's own
        folders by words."""
        return hide_paths(message, {**self.hidden, **self.names})

    def remove(self):
        """Delete the files written for the request."""
        for path in getattr(self, "_written", []):
            try:
                os.remove(path)
            except FileNotFoundError:
                pass


def _checked_file(value, field, allow_path, scratch):
    if not isinstance(value, dict) or not ({"b64", "path"} & value.keys()):
        raise invalid(field, f"must be an object {{\"b64\": \"<base64 of the file>\"}}, got {_json_type(value)}")
    if "b64" in value:
        encoded = value["b64"]
        if not isinstance(encoded, str):
            raise invalid(f"{field}.b64", f"must be a base64 string, got {_json_type(encoded)}")
        try:
            data = base64.b64decode(encoded, validate=True)
        except (binascii.Error, ValueError) as err:
            raise invalid(f"{field}.b64", f"not valid base64 ({err})") from None
        if not data:
            raise invalid(f"{field}.b64", "decodes to an empty file")
        return scratch.write(data, f"{field}.b64")
    return _allowed_path(value["path"], f"{field}.path", allow_path, scratch)


def _allowed_path(path, field, allow_path, scratch):
    if allow_path is None:
        raise RequestError(403, "forbidden", f"{field}: this server reads no server-side paths "
                                             f"(started without --allow_path); send the file as b64")
    if not isinstance(path, str) or not path or "\x00" in path:
        raise invalid(field, "must be a non-empty path string")
    resolved = os.path.realpath(os.path.join(allow_path, path))
    if os.path.commonpath([resolved, allow_path]) != allow_path:
        raise RequestError(403, "forbidden", f"{field}: {path!r} is outside the folder the server may read")
    if not os.path.exists(resolved):
        raise invalid(field, f"{path!r} does not exist in the folder the server may read")
    scratch.show(resolved, path)
    return resolved


def decode_instances(instances, kind, options, scratch, field="instances"):
    """The inputs for ``task.predict`` of each instance (a 400 or 403 names the first wrong one, as
    ``field[i]``).

    ``options``: the server's :class:`~zoo.serving.options.ServeOptions`; ``scratch``: a :class:`ScratchFiles`
    that receives the decoded ``b64`` files.
    """
    decoded, name = [], field
    for i, value in enumerate(instances):
        field = f"{name}[{i}]"
        if kind == "text":
            decoded.append(_checked_text(value, field, options.max_text_len))
        elif kind == "pair":
            decoded.append(_checked_pair(value, field, options.max_text_len))
        else:
            decoded.append(_checked_file(value, field, options.allow_path, scratch))
    return decoded
