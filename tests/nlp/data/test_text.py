"""nlp.data.text: UTF-8 line reading, full-width → half-width, cutting long sequences."""
import pytest

import numpy

from nlp.data.text import (TextFormatError, code_points, full_to_half, full_to_half_codes, read_utf8_lines, split_long,
                           split_points)


def test_full_to_half_maps_the_full_width_block_and_ideographic_space():
    assert full_to_half("１２月３１日，ＡＢｃ！　（附图）") == "12月31日,ABc! (附图)"
    full = "".join(chr(c) for c in range(0xFF01, 0xFF5F))
    assert full_to_half(full) == "".join(chr(c) for c in range(0x21, 0x7F))


def test_full_to_half_keeps_everything_else_and_the_length():
    text = "。、“”——中国abc 12～\uff5f\uff00"          # U+FF5F and U+FF00 lie just outside the block
    assert full_to_half(text) == "。、“”——中国abc 12~\uff5f\uff00"
    assert len(full_to_half(text)) == len(text)


def test_full_to_half_on_code_points_equals_full_to_half():
    text = "".join(chr(c) for c in range(0x3000 - 2, 0x3003)) + "".join(chr(c) for c in range(0xFF00, 0xFF61)) + \
        "中国abc\ud800😀"                                            # a lone surrogate and an emoji too
    assert code_points(text).tolist() == [ord(c) for c in text]
    assert full_to_half_codes(code_points(text)).tolist() == [ord(c) for c in full_to_half(text)]
    assert code_points(["a", "bc", "中"]).tolist() == [97, -1, 0x4E2D]
    assert full_to_half_codes(numpy.zeros(0, dtype=numpy.int64)).shape == (0,)


def test_full_to_half_rejects_non_strings():
    with pytest.raises(TypeError, match="expected a str, got bytes"):
        full_to_half("１".encode())


def test_read_utf8_lines_strips_line_ends_and_bom(tmp_path):
    path = tmp_path / "a.txt"
    path.write_bytes("\ufeff第一\r\n second \n\nlast\n".encode())
    assert read_utf8_lines(path) == ["第一", " second ", "", "last"]


def test_read_utf8_lines_names_file_and_line_of_invalid_utf8(tmp_path):
    path = tmp_path / "bad.txt"
    path.write_bytes("一\n二\n".encode() + b"ok \xff\xfe\n")
    with pytest.raises(TextFormatError, match=r"bad\.txt:3: invalid UTF-8 \(byte 0xff"):
        read_utf8_lines(path)


def test_split_points_cuts_after_sentence_ends():
    assert split_points("ab。cd。ef", 5) == [(0, 3), (3, 8)]
    assert split_long("ab。cd。ef", 5) == ["ab。", "cd。ef"]
    assert split_points("好吗?不好!走", 3) == [(0, 3), (3, 6), (6, 7)]   # half-width ends count too


def test_split_points_keeps_closing_marks_and_runs_of_punctuation():
    assert split_long("他说：“好。”然后走", 8) == ["他说：“好。”", "然后走"]
    assert split_long("等等……再说", 5) == ["等等……", "再说"]


def test_split_points_hard_cuts_without_punctuation():
    assert split_points("abcdefgh", 3) == [(0, 3), (3, 6), (6, 8)]


def test_split_points_respects_allowed_cuts():
    text = "abcdefghij"
    allowed = [True, False, False, True, False, True, False, False, False, True]
    # no sentence end: the last allowed position within reach, else a hard cut
    assert split_points(text, 4, allowed) == [(0, 3), (3, 5), (5, 9), (9, 10)]
    # a sentence end that is not an allowed cut is skipped
    assert split_points("ab。cdef", 4, [True, False, False, False, True, False, False]) == [(0, 4), (4, 7)]


def test_split_long_covers_everything_within_max_len():
    text = "今天天气很好。我们去公园散步吧！" * 7 + "没有标点的一段很长很长的文字" * 3
    chunks = split_long(text, 20)
    assert "".join(chunks) == text
    assert max(map(len, chunks)) <= 20
    assert sum(c.endswith(("。", "！")) for c in chunks) >= 7
    assert split_long(list("abc"), 2) == [["a", "b"], ["c"]]


def test_split_points_trivial_cases():
    assert split_points("", 5) == []
    assert split_points("abcdef", 0) == [(0, 6)]
    assert split_points("abc", 3) == [(0, 3)]
    with pytest.raises(ValueError, match="max_len must be positive"):
        split_points("abc", -1)
    with pytest.raises(ValueError, match=r"allowed has shape \(2,\), expected \(3,\)"):
        split_points("abc", 2, [True, True])
