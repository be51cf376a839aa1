"""video.data.synthetic: the specification, checked on the plans and measured on decoded videos."""
import dataclasses
import json
import math
import os

import numpy
import pytest

pytest.importorskip("av")
pytest.importorskip("cv2")

from video.data.decode import VideoReader  # noqa: E402
from video.data.encode import write_video  # noqa: E402
from video.data.synthetic import (BACKGROUNDS, FILLS, MARK_COLOR, MARKS, MOTIONS, PLAIN_BACKGROUND,  # noqa: E402
                                  REVERSE_PAIRS, SHAPES, SyntheticSpec, make_synthetic_set, plan_video,
                                  render_video, split_of)

SMALL = SyntheticSpec(num_frames=(24, 30), fps=(10, 20), width=(64, 80), height=(64, 72))


def runs(flags):
    """Lengths and values of the runs of equal values in a 1-D bool array: [(value, length), …]."""
    edges = numpy.flatnonzero(numpy.diff(flags.astype(int))) + 1
    return [(bool(part[0]), len(part)) for part in numpy.split(flags, edges)]


def check_plan(plan):
    """The specification, on the plan's per-frame parameters."""
    name, t = MOTIONS[plan.motion], plan.num_frames
    dx, dy = plan.x[-1] - plan.x[0], plan.y[-1] - plan.y[0]
    turn, ratio = math.degrees(plan.angle[-1] - plan.angle[0]), plan.size[-1] / plan.size[0]
    moves = {"move_left": dx <= -0.25 * plan.width, "move_right": dx >= 0.25 * plan.width,
             "move_up": dy <= -0.25 * plan.height, "move_down": dy >= 0.25 * plan.height}
    if name in moves:
        assert moves[name], (name, dx, dy)
        assert numpy.ptp(plan.y if name in ("move_left", "move_right") else plan.x) == 0
    else:
        assert dx == dy == 0
    assert turn >= 90 if name == "rotate_clockwise" else turn <= -90 if name == "rotate_counterclockwise" \
        else turn == 0
    assert ratio >= 1.6 if name == "grow" else ratio <= 1 / 1.6 if name == "shrink" else ratio == 1
    pattern = runs(plan.visible)
    if name in ("appear", "disappear"):
        assert [v for v, _ in pattern] == ([False, True] if name == "appear" else [True, False])
        assert 0.2 * (t - 1) <= pattern[0][1] <= 0.8 * (t - 1) + 1
    elif name == "blink":
        assert pattern[0][0] and pattern[-1][0] and sum(not v for v, _ in pattern) >= 2
        assert min(n for _, n in pattern) >= 2
    else:
        assert plan.visible.all()
    radius = plan.size / 2  # the whole object stays inside the frame, camera shake included
    assert (plan.x - radius + plan.shake[:, 0] >= 0).all() and (plan.x + radius + plan.shake[:, 0] <= plan.width).all()
    assert (plan.y - radius + plan.shake[:, 1] >= 0).all() and (plan.y + radius + plan.shake[:, 1] <= plan.height).all()


@pytest.mark.parametrize("motion", range(len(MOTIONS)))
def test_every_plan_meets_the_specification(motion):
    for seed in range(25):
        check_plan(plan_video(motion, numpy.random.default_rng(seed)))
        check_plan(plan_video(motion, numpy.random.default_rng(seed), SMALL))


def test_pairs_are_exact_time_reverses():
    for first, second in REVERSE_PAIRS:
        for seed in range(2):
            forward = render_video(plan_video(first, numpy.random.default_rng(seed), SMALL))
            backward = render_video(plan_video(second, numpy.random.default_rng(seed), SMALL))
            numpy.testing.assert_array_equal(backward, forward[::-1])


def test_appearance_draws_do_not_depend_on_the_motion():
    for seed in range(5):
        plans = [plan_video(m, numpy.random.default_rng(seed)) for m in range(len(MOTIONS))]
        for field in ("shape", "num_frames", "fps", "width", "height", "color", "background_seed"):
            assert len({getattr(p, field) for p in plans}) == 1, field
        assert len({round(float(numpy.sqrt(p.size[0] * p.size[-1])), 6) for p in plans}) == 1  # geometric mean
        assert len({p.look for p in plans}) == 1 and len({p.gain.sum().round(9) for p in plans}) == 1


def test_pair_statistics_mirror_each_other():
    """Over many seeds, where move_right starts is where move_left ends, and the switch frames mirror."""
    starts_right, ends_left, appear, disappear = [], [], [], []
    for seed in range(200):
        rng = lambda: numpy.random.default_rng(1000 + seed)  # noqa: E731
        starts_right.append(plan_video(1, rng()).x[0] / plan_video(1, rng()).width)
        ends_left.append(plan_video(0, numpy.random.default_rng(5000 + seed)).x[-1] / 112)
        a, d = plan_video(8, rng()), plan_video(9, numpy.random.default_rng(5000 + seed))
        appear.append(numpy.argmax(a.visible) / a.num_frames)
        disappear.append(1 - numpy.argmin(d.visible) / d.num_frames)
    for x, y in ((starts_right, ends_left), (appear, disappear)):
        assert abs(numpy.mean(x) - numpy.mean(y)) < 0.03 and abs(numpy.std(x) - numpy.std(y)) < 0.03


def measure(frames):
    """Per frame: object pixel count, centroid (x, y), and the angle of the mark around the centroid."""
    background = numpy.array(PLAIN_BACKGROUND)
    differs = numpy.abs(frames.astype(int) - background).max(axis=-1) > 40
    dark = (frames.astype(int) < numpy.array(MARK_COLOR) + 60).all(axis=-1) & differs
    out = []
    for mask, mark in zip(differs, dark):
        ys, xs = numpy.nonzero(mask)
        if len(xs) < 5:
            out.append((len(xs), None, None, None))
            continue
        cx, cy = xs.mean(), ys.mean()
        my, mx = numpy.nonzero(mark)
        angle = math.atan2(my.mean() - cy, mx.mean() - cx) if len(mx) else None
        out.append((len(xs), cx, cy, angle))
    return out


def test_decoded_videos_show_each_motion_on_screen(tmp_path):
    spec = dataclasses.replace(SMALL, plain_background=True, width=(96, 96), height=(96, 96))
    for motion, name in enumerate(MOTIONS):
        plan = plan_video(motion, numpy.random.default_rng(motion), spec, shape=motion % len(SHAPES))
        path = write_video(tmp_path / f"{name}.mp4", render_video(plan), plan.fps)
        with VideoReader(path) as reader:
            assert len(reader) == plan.num_frames and reader.fps == pytest.approx(plan.fps)
            stats = measure(reader.get_frames(range(len(reader))))
        seen = numpy.array([area > 20 for area, *_ in stats])
        shown = [s for s in stats if s[1] is not None]
        first, last = shown[0], shown[-1]
        dx, dy = last[1] - first[1], last[2] - first[2]
        if name == "move_left":
            assert dx < -0.23 * 96 and abs(dy) < 2
        elif name == "move_right":
            assert dx > 0.23 * 96 and abs(dy) < 2
        elif name == "move_up":  # toward the top edge: y decreases
            assert dy < -0.23 * 96 and abs(dx) < 2
        elif name == "move_down":
            assert dy > 0.23 * 96 and abs(dx) < 2
        else:
            assert abs(dx) < 2 and abs(dy) < 2, name
        if name.startswith("rotate"):  # y points down, so a growing angle turns clockwise on screen
            turn = math.degrees(numpy.unwrap([s[3] for s in shown])[-1] - shown[0][3])
            assert turn > 80 if name == "rotate_clockwise" else turn < -80, (name, turn)
        if name in ("grow", "shrink"):
            ratio = math.sqrt(last[0] / first[0])
            assert ratio > 1.5 if name == "grow" else ratio < 1 / 1.5, (name, ratio)
        pattern = runs(seen)
        if name == "appear":
            assert [v for v, _ in pattern] == [False, True]
            assert 0.2 * len(seen) - 1 <= pattern[0][1] <= 0.8 * len(seen) + 1
        elif name == "disappear":
            assert [v for v, _ in pattern] == [True, False]
        elif name == "blink":
            assert sum(not v for v, _ in pattern) >= 2
        else:
            assert seen.all(), name


def test_textured_background_shake_and_noise():
    plan = plan_video(11, numpy.random.default_rng(3))
    frames = render_video(plan).astype(float)
    assert frames[0].std() > 10  # textured, not flat
    assert numpy.abs(plan.shake).max() >= 1 and len({tuple(s) for s in plan.shake}) > 2
    assert numpy.abs(frames[1] - frames[0]).mean() > 2  # shake and fresh noise every frame
    numpy.testing.assert_array_equal(render_video(plan), render_video(plan_video(11, numpy.random.default_rng(3))))


def test_bad_specifications_are_refused():
    for change, message in ((dict(travel=(0.2, 0.4)), "travel"), (dict(rotation=(45.0, 90.0)), "rotation"),
                            (dict(scale_ratio=(1.2, 2.0)), "scale_ratio"), (dict(switch=(0.3, 0.8)), "switch"),
                            (dict(blink_off_phases=(1, 3)), "blink"), (dict(object_size=(0.5, 0.6)), "no room")):
        with pytest.raises(ValueError, match=message):
            SyntheticSpec(**change)
    with pytest.raises(ValueError, match="motion"):
        plan_video(12, numpy.random.default_rng(0))


def test_a_set_is_balanced_split_and_the_same_for_any_number_of_workers(tmp_path):
    spec = dataclasses.replace(SMALL, width=(32, 48), height=(32, 32), num_frames=(16, 20), object_size=(0.2, 0.3))
    one = make_synthetic_set(tmp_path / "one", 26, seed=4, spec=spec, workers=1)
    two = make_synthetic_set(tmp_path / "two", 26, seed=4, spec=spec, workers=2)
    assert one["splits"] == two["splits"] == {"train": 20, "dev": 3, "test": 3}
    names = sorted(os.listdir(tmp_path / "one"))
    assert names == ["metadata.jsonl", "motion_classes.txt", "motion_dev.txt", "motion_test.txt", "motion_train.txt",
                     "multilabel_classes.txt", "multilabel_dev.txt", "multilabel_test.txt", "multilabel_train.txt",
                     "videos"]
    for name in names[:-1] + [f"videos/{i:06d}.mp4" for i in range(26)]:
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "two" / name).read_bytes(), name
    metadata = [json.loads(line) for line in (tmp_path / "one" / "metadata.jsonl").read_text().splitlines()]
    counts = numpy.bincount([MOTIONS.index(m["motion"]) for m in metadata], minlength=12)
    assert counts.min() >= 2 and counts.max() <= 3
    assert [m["split"] for m in metadata[:3]] == ["test", "dev", "train"] == [split_of(i) for i in range(3)]
    single = (tmp_path / "one" / "motion_test.txt").read_text().split()
    multi = (tmp_path / "one" / "multilabel_test.txt").read_text().split()
    assert single[0] == multi[0] == "videos/000000.mp4"
    motion, shape = (int(v) for v in multi[1].split(","))
    assert motion == int(single[1]) == MOTIONS.index(metadata[0]["motion"])
    assert shape == 12 + SHAPES.index(metadata[0]["shape"])
    classes = (tmp_path / "one" / "multilabel_classes.txt").read_text().split()
    assert classes == list(MOTIONS + SHAPES)
    with VideoReader(tmp_path / "one" / "videos" / "000005.mp4") as reader:
        assert len(reader) == metadata[5]["num_frames"] and reader.width == metadata[5]["width"]
    before = os.stat(tmp_path / "one" / "videos" / "000007.mp4").st_mtime_ns
    again = make_synthetic_set(tmp_path / "one", 26, seed=4, spec=spec, workers=1)  # resumes: keeps files
    assert again["videos"] == 26 and os.stat(tmp_path / "one" / "videos" / "000007.mp4").st_mtime_ns == before


def plans_with_every_look(limit=400):
    """Plans (seed order) until every fill, mark and background has appeared at least once."""
    wanted = {("fill", v) for v in FILLS} | {("mark", v) for v in MARKS} | {("background", v) for v in BACKGROUNDS}
    plans = []
    for seed in range(limit):
        plan = plan_video(11, numpy.random.default_rng(seed), SMALL)
        new = {("fill", plan.look.fill), ("mark", plan.look.mark), ("background", plan.look.background)} & wanted
        if new:
            plans.append(plan)
            wanted -= new
        if not wanted:
            return plans
    raise AssertionError(f"never drawn: {sorted(wanted)}")


def test_every_look_renders_an_object_set_off_from_its_background():
    for plan in plans_with_every_look():
        frames = render_video(plan).astype(float)
        empty = render_video(dataclasses.replace(plan, visible=numpy.zeros(plan.num_frames, dtype=bool))).astype(float)
        differs = numpy.abs(frames - empty).max(axis=-1)
        covered = differs[0] > 30
        area = math.pi * (plan.size[0] / 2) ** 2
        assert covered.sum() > 0.2 * area, (plan.look, covered.sum(), area)
        ys, xs = numpy.nonzero(covered)
        x0, y0 = plan.x[0] + plan.shake[0, 0], plan.y[0] + plan.shake[0, 1]
        assert abs(xs.mean() - x0) < plan.size[0] / 2 and abs(ys.mean() - y0) < plan.size[0] / 2, plan.look


def test_the_look_varies_and_light_drifts_within_its_bound():
    plans = [plan_video(0, numpy.random.default_rng(seed)) for seed in range(300)]
    for field, values in (("fill", FILLS), ("mark", MARKS), ("background", BACKGROUNDS)):
        counts = numpy.array([sum(getattr(p.look, field) == v for p in plans) for v in values])
        assert counts.min() > 0.5 * 300 / len(values), (field, counts)
    spec = SyntheticSpec()
    assert all(abs(p.gain - 1).max() <= 0.8 * spec.light_drift + 1e-9 for p in plans)   # ramp 0.5 + wave 0.3
    assert numpy.mean([p.look.blur > 0 for p in plans]) == pytest.approx(0.5, abs=0.1)
    crfs = [p.look.crf for p in plans]
    assert min(crfs) == spec.crf[0] and max(crfs) == spec.crf[1]
    greys = [p for p in plans if max(p.look.color) - min(p.look.color) < 30]
    assert greys, "grey objects are drawn too"
