"""video.data.heldout: the motion definitions measured on rendered frames, the styles, and the written set."""
import json
import math
import os

import numpy
import pytest

pytest.importorskip("av")

from framework.config import ConfigError  # noqa: E402
from video.data.decode import VideoReader  # noqa: E402
from video.data.heldout import (BACKGROUNDS, FILLS, MARKS, MOTIONS, PLAIN_BACKGROUND, PLAIN_MARK,  # noqa: E402
                                PLAIN_OBJECT, PROFILES, SHAPES, _plan, assign_labels, ensure_heldout_set, main,
                                make_heldout_set, render_clip)

BACKGROUND, OBJECT, MARK = (numpy.array(c, float) for c in (PLAIN_BACKGROUND, PLAIN_OBJECT, PLAIN_MARK))


def measure(frames):
    """Per frame of a plain clip: object area (pixels), centroid (x, y), mark centroid (x, y), object mask.

    Object and mark share their red level, so red is each pixel's coverage by the object (edge pixels blend
    it with the background): area and centroid weigh pixels by it. Centroids are nan where nothing is seen.
    """
    weight = (frames[..., 0].astype(numpy.float32) - BACKGROUND[0]) / (OBJECT[0] - BACKGROUND[0])
    green = frames[..., 1].astype(numpy.float32)
    mark = (weight > 0.5) & (numpy.abs(green - MARK[1]) < numpy.abs(green - OBJECT[1]))
    xx, yy = numpy.arange(frames.shape[2]), numpy.arange(frames.shape[1])
    area = weight.sum(axis=(1, 2))
    with numpy.errstate(invalid="ignore", divide="ignore"):
        centre = numpy.stack([weight.sum(1) @ xx, weight.sum(2) @ yy], 1) / area[:, None]
        dot = numpy.stack([mark.sum(1) @ xx, mark.sum(2) @ yy], 1) / mark.sum(axis=(1, 2))[:, None]
    return area, centre, dot, weight > 0.5


def runs(flags):
    """[(value, length), …] of the runs of equal values in a 1-D bool array."""
    edges = numpy.flatnonzero(numpy.diff(flags.astype(int))) + 1
    return [(bool(part[0]), len(part)) for part in numpy.split(flags, edges)]


def check_definition(name, frames):
    """The definition of motion ``name`` (see the module docstring), measured on plain frames."""
    t, size = len(frames), frames.shape[1]
    area, centre, dot, inside = measure(frames)
    visible = area > 0
    assert not (inside[:, 0].any() or inside[:, -1].any() or inside[:, :, 0].any() or inside[:, :, -1].any())
    if name in ("appear", "disappear"):
        pattern = runs(visible)
        assert [v for v, _ in pattern] == ([False, True] if name == "appear" else [True, False]), pattern
        assert 0.2 * t <= pattern[0][1] <= 0.8 * t
        return
    if name == "blink":
        pattern = runs(visible)
        assert pattern[0][0] and pattern[-1][0] and sum(not v for v, _ in pattern) in (2, 3), pattern
        assert min(n for _, n in pattern) >= 2
        return
    assert visible.all()
    if name == "still":
        assert (frames == frames[0]).all()
        return
    dx, dy = centre[-1] - centre[0]
    moves = {"move_left": -dx, "move_right": dx, "move_up": -dy, "move_down": dy}
    if name in moves:
        assert moves[name] >= 0.3 * size, (name, dx, dy)
        across = centre[:, 1] if name in ("move_left", "move_right") else centre[:, 0]
        assert numpy.ptp(across) < 0.25
        assert numpy.ptp(area) <= 0.03 * area.mean()
        return
    assert numpy.ptp(centre, axis=0).max() < 0.25
    if name.startswith("rotate"):
        angle = numpy.unwrap(numpy.arctan2(dot[:, 1] - centre[:, 1], dot[:, 0] - centre[:, 0]))
        turn = math.degrees(angle[-1] - angle[0])
        assert (turn >= 90) if name == "rotate_clockwise" else (turn <= -90), turn
        assert numpy.ptp(area) <= 0.03 * area.mean()
    else:
        ratio = area[-1] / area[0]
        assert (ratio >= 1.6 ** 2) if name == "grow" else (ratio <= 1 / 1.6 ** 2), ratio


@pytest.mark.parametrize("motion", MOTIONS)
def test_every_motion_meets_its_definition_on_the_frames(motion):
    for shape in SHAPES:
        for seed in (0, 1):
            rng = numpy.random.default_rng([seed, MOTIONS.index(motion), SHAPES.index(shape)])
            frames, fps, info = render_clip(motion, shape, rng, plain=True)
            assert frames.dtype == numpy.uint8 and frames.shape == (info["num_frames"], info["size"],
                                                                      info["size"], 3)
            assert 24 <= len(frames) <= 64 and 20 <= fps <= 30 and info["size"] in (96, 112, 128)
            check_definition(motion, frames)


def test_the_object_keeps_its_size_and_stays_inside_the_frame_shake_included():
    for i in range(36):
        info = _plan(MOTIONS[i % 12], SHAPES[i % 6], numpy.random.default_rng([5, i]))["info"]
        track, size = info["track"], info["size"]
        radius = track["diameter"] / 2
        for axis, key in ((0, "x"), (1, "y")):
            position = track[key] + track["shake"][:, axis]
            assert (position - radius >= 0).all() and (position + radius <= size).all()
        if info["motion"] not in ("grow", "shrink"):
            assert 0.2 * size <= radius[0] * 2 <= 0.35 * size and numpy.ptp(radius) == 0
        assert numpy.abs(track["shake"]).max() <= 2


def test_clips_are_deterministic_and_plain_keeps_the_geometry():
    first, fps, info = render_clip("rotate_clockwise", "star", numpy.random.default_rng([9, 4]))
    again, _, info_again = render_clip("rotate_clockwise", "star", numpy.random.default_rng([9, 4]))
    assert numpy.array_equal(first, again)
    assert json.dumps({k: v for k, v in info.items() if k != "track"}) == \
        json.dumps({k: v for k, v in info_again.items() if k != "track"})
    other, _, _ = render_clip("rotate_clockwise", "star", numpy.random.default_rng([9, 5]))
    assert other.shape != first.shape or not numpy.array_equal(other, first)
    plain, plain_fps, plain_info = render_clip("rotate_clockwise", "star", numpy.random.default_rng([9, 4]),
                                               plain=True)
    assert plain.shape == first.shape and plain_fps == fps
    for key in ("x", "y", "angle", "diameter", "visible"):
        assert numpy.array_equal(plain_info["track"][key], info["track"][key])
    assert plain_info["background"] == "flat" and plain_info["mark"] == "dot" and plain_info["fill"] == "solid"


def colour_distance(a, b):
    return float(numpy.linalg.norm(numpy.asarray(a, float) - numpy.asarray(b, float)))


def test_colours_contrast_over_many_clips():
    seen = {"background": set(), "fill": set(), "mark": set(), "profile": set(), "light": set()}
    for i in range(120):
        info = _plan(MOTIONS[i % 12], SHAPES[i % 6], numpy.random.default_rng([11, i]))["info"]
        for key, values in seen.items():
            values.add(info[key])
        for colour in info["background_colors"]:
            assert colour_distance(info["object_color"], colour) >= 0.3 * 255, info
        if info["mark"] != "notch":
            assert colour_distance(info["mark_color"], info["object_color"]) >= 0.3 * 255, info
        if info["mark"] == "notch":
            assert info["shape"] not in ("triangle", "star")
        assert 18 <= info["crf"] <= 32
    assert seen["background"] == set(BACKGROUNDS) and seen["fill"] == set(FILLS) and seen["mark"] == set(MARKS)
    assert seen["profile"] == set(PROFILES) | {None} and len(seen["light"]) == 3


def styled_combinations():
    """Every background family, fill and mark at least once (notches on shapes that take one)."""
    for i, background in enumerate(BACKGROUNDS + BACKGROUNDS[:1]):
        mark = MARKS[i % len(MARKS)]
        shape = ("circle", "square", "ring", "cross")[i % 4] if mark == "notch" else SHAPES[i % len(SHAPES)]
        yield background, FILLS[i % len(FILLS)], mark, shape


@pytest.mark.parametrize("background, fill, mark, shape", list(styled_combinations()))
def test_styles_render_and_the_object_contrasts_with_its_background(background, fill, mark, shape):
    style = {"background": background, "fill": fill, "mark": mark}
    rng = [13, BACKGROUNDS.index(background)]
    frames, _, info = render_clip("appear", shape, numpy.random.default_rng(rng), style=style)
    assert (info["background"], info["fill"], info["mark"]) == (background, fill, mark)
    plain, _, _ = render_clip("appear", shape, numpy.random.default_rng(rng), plain=True)
    track = info["track"]
    on = int(numpy.argmax(track["visible"]))
    off = on - 1
    footprint = measure(plain[on:on + 1])[3][0]
    interior = footprint & numpy.roll(footprint, 1, 0) & numpy.roll(footprint, -1, 0) \
        & numpy.roll(footprint, 1, 1) & numpy.roll(footprint, -1, 1)
    sx, sy = track["shake"][on]
    interior = numpy.roll(interior, (sy, sx), axis=(0, 1))          # where the object is in the shaken frame
    dx, dy = track["shake"][on] - track["shake"][off]
    empty = numpy.roll(frames[off].astype(float), (dy, dx), axis=(0, 1))   # the background behind it
    contrast = numpy.linalg.norm(frames[on].astype(float) - empty, axis=-1)[interior]
    assert interior.sum() >= 20
    assert numpy.median(contrast) >= 50, (info, numpy.median(contrast))


def test_bad_arguments_are_named():
    rng = numpy.random.default_rng(0)
    with pytest.raises(ValueError, match="motion"):
        render_clip("jump", "circle", rng)
    with pytest.raises(ValueError, match="notch"):
        render_clip("still", "star", rng, style={"mark": "notch"})
    with pytest.raises(ValueError, match="unknown style"):
        render_clip("still", "ring", rng, style={"colour": "red"})


def test_labels_are_balanced():
    labels = assign_labels(240, seed=0)
    motions, shapes = numpy.array(labels).T
    assert numpy.bincount(motions).tolist() == [20] * 12 and numpy.bincount(shapes).tolist() == [40] * 6
    for m in range(12):
        assert set(numpy.bincount(shapes[motions == m], minlength=6).tolist()) <= {3, 4}
    assert labels != assign_labels(240, seed=1) and labels == assign_labels(240, seed=0)
    motions, shapes = numpy.array(assign_labels(30, seed=2)).T
    assert sorted(set(numpy.bincount(motions).tolist())) == [2, 3] and numpy.bincount(shapes).tolist() == [5] * 6


@pytest.fixture(scope="module")
def heldout_set(tmp_path_factory):
    home = tmp_path_factory.mktemp("home")
    saved = os.environ.get("OAR_HOME")
    os.environ["OAR_HOME"] = str(home)
    try:
        root = ensure_heldout_set(num=12, seed=3, workers=2)
    finally:
        if saved is None:
            del os.environ["OAR_HOME"]
        else:
            os.environ["OAR_HOME"] = saved
    assert root == os.path.join(str(home), "heldout_videos", "n12-s3-v1")
    return root


def read_lines(path):
    with open(path, encoding="utf-8") as f:
        return f.read().splitlines()


def test_the_set_has_the_list_layout_and_decodable_videos(heldout_set):
    root = heldout_set
    assert read_lines(os.path.join(root, "motion_classes.txt")) == list(MOTIONS)
    assert read_lines(os.path.join(root, "multilabel_classes.txt")) == list(MOTIONS + SHAPES)
    motion_lines = read_lines(os.path.join(root, "motion_test.txt"))
    multi_lines = read_lines(os.path.join(root, "multilabel_test.txt"))
    metadata = [json.loads(line) for line in read_lines(os.path.join(root, "metadata.jsonl"))]
    assert len(motion_lines) == len(multi_lines) == len(metadata) == 12
    assert sorted(os.listdir(os.path.join(root, "videos"))) == [f"{i:06d}.mp4" for i in range(12)]
    labels = assign_labels(12, seed=3)
    for i, (motion_line, multi_line, record) in enumerate(zip(motion_lines, multi_lines, metadata, strict=True)):
        path, motion = motion_line.split(" ")
        assert path == record["path"] == f"videos/{i:06d}.mp4" and record["split"] == "test"
        assert int(motion) == MOTIONS.index(record["motion"]) == labels[i][0]
        assert multi_line == f"{path} {motion},{12 + SHAPES.index(record['shape'])}"
        assert SHAPES.index(record["shape"]) == labels[i][1]
        for key in ("num_frames", "fps", "size", "background", "fill", "mark", "crf", "light"):
            assert key in record
        with VideoReader(os.path.join(root, path)) as reader:
            assert len(reader) == record["num_frames"]
            assert reader.height == reader.width == record["size"]
            assert abs(reader.fps - record["fps"]) < 1e-3
            assert reader.get_frames([0, len(reader) - 1]).shape == (2, record["size"], record["size"], 3)
    assert sorted(int(line.split(" ")[1]) for line in motion_lines) == list(range(12))
    assert numpy.bincount([SHAPES.index(r["shape"]) for r in metadata]).tolist() == [2] * 6
    with open(os.path.join(root, "complete.json"), encoding="utf-8") as f:
        assert json.load(f)["settings"] == {"num": 12, "seed": 3, "version": 1}


def test_the_set_resumes_and_depends_only_on_seed_and_index(heldout_set, capsys):
    root = heldout_set
    videos = [os.path.join(root, "videos", name) for name in sorted(os.listdir(os.path.join(root, "videos")))]
    stamps = [os.stat(v).st_mtime_ns for v in videos]
    before = read_lines(os.path.join(root, "metadata.jsonl"))
    result = main(["--out", root, "--num", "12", "--seed", "3", "--workers", "1"])   # resumes: writes no video
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1]) == result
    assert result["videos"] == 12 and result["splits"] == {"test": 12}
    assert [os.stat(v).st_mtime_ns for v in videos] == stamps
    assert read_lines(os.path.join(root, "metadata.jsonl")) == before     # workers=2 before, 1 now
    record = json.loads(before[5])
    _, _, info = render_clip(record["motion"], record["shape"], numpy.random.default_rng([3, 5]))
    assert {k: v for k, v in info.items() if k not in ("track", "plain")} == \
        {k: v for k, v in record.items() if k not in ("path", "split")}
    assert ensure_heldout_set(num=12, seed=3, root=root) == root
    with pytest.raises(ConfigError, match="other settings"):
        ensure_heldout_set(num=13, seed=3, root=root)


def test_make_heldout_set_reports_progress(tmp_path):
    calls = []
    result = make_heldout_set(tmp_path, num=2, seed=4, workers=1, progress=lambda done, total: calls.append(done))
    assert calls == [1, 2] and sum(result["motions"].values()) == sum(result["shapes"].values()) == 2
    assert len(read_lines(tmp_path / "motion_test.txt")) == 2


def test_heldout_videos_dataset_reads_the_set_with_a_test_pipeline(tmp_path, monkeypatch):
    from video.data.datasets import HeldoutVideos
    monkeypatch.setenv("OAR_HOME", str(tmp_path))
    dataset = HeldoutVideos({"type": "SegmentSampler", "num_segments": 4, "mode": "test"},
                            [{"type": "Resize", "short_side": 64}, {"type": "CenterCrop", "size": 64},
                             {"type": "Normalize"}, {"type": "FormatClips"}], labels="multilabel", num=12, seed=2)
    assert len(dataset) == 12 and (tmp_path / "heldout_videos" / "n12-s2-v1" / "complete.json").is_file()
    sample = dataset[0]
    assert sample["imgs"].shape == (1, 4, 3, 64, 64) and sample["label"].shape == (18,)
    assert sample["label"][:12].sum() == 1 and sample["label"][12:].sum() == 1
