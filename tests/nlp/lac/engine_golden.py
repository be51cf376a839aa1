"""Test helper: the reference engines' outputs for ``lac_seg`` and ``lac_small`` (``data/lac_seg_small_engine.jsonl``).

Each row has ``model`` (``lac_seg`` or ``lac_small``), ``kind`` and the
engine's answer: ``words`` (and ``tags`` for ``lac_small``). ``kind`` is
``pd`` (People's Daily test-split lines, one in 80), ``edge`` (emoji, mixed
scripts, full-width and traditional characters, URLs), ``whitespace``
(whitespace-only, empty and space-holding texts, run through ``LAC(mode="seg")``
and the 2019 engine directly) or ``long``: a 10,000-character line made of
that model's ``pd`` lines joined and repeated, its answer stored as
``word_lengths`` (and ``tags``).
"""
import json
import os

import pytest

from framework.fetch import FetchError

GOLDEN = os.path.join(os.path.dirname(__file__), "data", "lac_seg_small_engine.jsonl")


def engine_rows(model):
    """``[(text, expected answer dict)]`` of ``model``'s rows, the long line rebuilt from its ``pd`` rows."""
    with open(GOLDEN, encoding="utf-8") as f:
        rows = [row for row in map(json.loads, f) if row["model"] == model]
    keys = ("words", "tags") if model == "lac_small" else ("words",)
    pairs = [(row["text"], {k: row[k] for k in keys}) for row in rows if row["kind"] != "long"]
    joined = "".join(row["text"] for row in rows if row["kind"] == "pd")
    for row in (row for row in rows if row["kind"] == "long"):
        text = (joined * (row["chars"] // len(joined) + 1))[:row["chars"]]
        bounds, words = 0, []
        for length in row["word_lengths"]:
            words.append(text[bounds:bounds + length])
            bounds += length
        pairs.append((text, {"words": words, **({"tags": row["tags"]} if "tags" in row else {})}))
    return pairs


def fetched_or_skip(what, load):
    """``load()``, or a skip when what it needs can be neither fetched nor found in ``$OAR_HOME``."""
    try:
        return load()
    except FetchError as err:
        pytest.skip(f"{what} cannot be fetched here and is not cached ({str(err).split('. ')[0]})")
