"""LAC's official preprocessing (coarse segmentation and ``text_to_ids``) as two compiled CPU kernels.

:class:`~nlp.lac.preprocess.OfficialPreprocessor` runs these when the compiled kernels are on
(:func:`framework.kernels.cpu.enabled`) and the segmentation dictionary has no word longer than three
characters (LAC's has none); otherwise the NumPy and Python reference (:meth:`CoarseSegmenter.piece_lengths`
and the preprocessor's own assembly), which gives the same ids. A text of n characters then costs one pass
over its code points instead of a Python step per character and per dictionary probe:

- :func:`coarse_pieces` walks each text from the right as LAC's ``Segment.fast_cut`` does: at each
  character the single character, and the dictionary words of two and three characters that begin there
  (their code points as one int64 key, found by binary search in the sorted keys), scored with the same
  float64 additions and the same tie rule (``>=``: the longer piece), without fast-math; then it walks the
  route from the left, merging runs of single ASCII letters and digits. Each piece comes out with its
  length and id: a character's id, a dictionary word's own id (or -1 when ``word.dic`` lacks it: one id per
  character), and -2 for a merged run of two or more characters, which the caller looks up in ``word.dic``.
- :func:`assemble` expands the pieces into the ids, the characters each id covers and the ids per text.

Importing this module imports Numba (:mod:`framework.kernels.cpu.compiler`): the preprocessor imports it on
first use.
"""
import numpy

from framework.kernels.cpu.compiler import kernel

__all__ = ["RUN", "coarse_pieces", "assemble", "pieces_and_ids"]

RUN = -2                # a piece id: a merged run of ASCII letters and digits, to look up by the caller


@kernel(fastmath=False)
def _find(keys, key):
    """The index of ``key`` in the sorted ``keys``, or -1."""
    at = numpy.searchsorted(keys, key)
    return at if at < keys.shape[0] and keys[at] == key else -1


@kernel(fastmath=False)
def coarse_pieces(codes, sizes, keys2, ids2, keys3, ids3, scores, alnum, char_ids, piece_len, piece_id,
                  counts):
    """Pieces of every text (module docstring); returns how many were written to piece_len/piece_id."""
    longest = 0
    for t in range(sizes.shape[0]):
        longest = max(longest, sizes[t])
    score = numpy.zeros(longest + 1, dtype=numpy.float64)
    step = numpy.ones(longest, dtype=numpy.int64)
    word = numpy.full(longest, -1, dtype=numpy.int64)
    first, p = 0, 0
    for t in range(sizes.shape[0]):
        size = sizes[t]
        score[size] = 0.0
        for i in range(size - 1, -1, -1):
            best, best_k, best_id = scores[1] + score[i + 1], 1, -1
            if i + 2 <= size:
                key = (codes[first + i] << 21) | codes[first + i + 1]
                j = _find(keys2, key)
                if j >= 0:
                    value = scores[2] + score[i + 2]
                    if value >= best:
                        best, best_k, best_id = value, 2, ids2[j]
                if i + 3 <= size:
                    j = _find(keys3, (key << 21) | codes[first + i + 2])
                    if j >= 0:
                        value = scores[3] + score[i + 3]
                        if value >= best:
                            best, best_k, best_id = value, 3, ids3[j]
            score[i], step[i], word[i] = best, best_k, best_id
        begin, at, run = p, 0, 0
        while at < size:
            k, code = step[at], codes[first + at]
            if k == 1 and code < 128 and alnum[code]:
                run += 1
            else:
                if run:
                    piece_len[p] = run
                    piece_id[p] = RUN if run > 1 else char_ids[first + at - 1]
                    p += 1
                    run = 0
                piece_len[p] = k
                piece_id[p] = char_ids[first + at] if k == 1 else word[at]
                p += 1
            at += k
        if run:
            piece_len[p] = run
            piece_id[p] = RUN if run > 1 else char_ids[first + size - 1]
            p += 1
        counts[t] = p - begin
        first += size
    return p

@kernel(fastmath=False)
def assemble(piece_len, piece_id, counts, char_ids, ids, lengths, sizes):
    """ids/lengths of the pieces end to end (a piece of id -1: its characters' ids) and ids per text;
    returns how many ids were written."""
    at, char, p = 0, 0, 0
    for t in range(counts.shape[0]):
        begin = at
        for _ in range(counts[t]):
            k, found = piece_len[p], piece_id[p]
            if found >= 0:
                ids[at], lengths[at] = found, k
                at += 1
            else:
                for c in range(k):
                    ids[at], lengths[at] = char_ids[char + c], 1
                    at += 1
            char += k
            p += 1
        sizes[t] = at - begin
    return at


def pieces_and_ids(codes, sizes, tables, char_ids, run_id):
    """(ids (M,), sizes (n,), word_lengths (M,)) int64 of texts given as their code points end to end (``codes``
    (N,) int64) and characters per text (``sizes`` (n,) int64).

    ``tables``: (keys2, ids2, keys3, ids3, scores, alnum): the sorted int64 keys of the dictionary's two- and
    three-character words and each word's id (-1: not a key of ``word.dic``), the float64 piece scores by
    length (0..3) and a bool table of the ASCII letters and digits; ``char_ids`` (N,) int64: each character's
    id; ``run_id(first, length)``: the id of a merged ASCII run, or -1 when ``word.dic`` lacks it.
    """
    piece_len = numpy.empty(len(codes), dtype=numpy.int64)
    piece_id = numpy.empty(len(codes), dtype=numpy.int64)
    counts = numpy.empty(len(sizes), dtype=numpy.int64)
    p = coarse_pieces(codes, sizes, *tables, char_ids, piece_len, piece_id, counts)
    runs = numpy.flatnonzero(piece_id[:p] == RUN)
    if len(runs):
        firsts = numpy.cumsum(piece_len[:p]) - piece_len[:p]
        for r in runs.tolist():
            piece_id[r] = run_id(int(firsts[r]), int(piece_len[r]))
    ids = numpy.empty(len(codes), dtype=numpy.int64)
    lengths = numpy.empty(len(codes), dtype=numpy.int64)
    out_sizes = numpy.empty(len(sizes), dtype=numpy.int64)
    m = assemble(piece_len[:p], piece_id[:p], counts, char_ids, ids, lengths, out_sizes)
    return ids[:m], out_sizes, lengths[:m]
