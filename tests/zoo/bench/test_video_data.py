"""The video data benchmark (``oar bench video_data``) runs at its quick size and reports its rows; timings are
never asserted beyond being positive."""
import pytest

pytest.importorskip("av")
pytest.importorskip("cv2")


def test_video_data_benchmark_quick():
    from zoo.bench.video_data import run_all
    result = run_all(quick=True)
    assert result["decode"]["seek_8_frames_s"] > 0 and result["decode"]["frames"] >= 32
    rows = result["tsn_112"]
    assert [(r["worker_type"], r["num_workers"]) for r in rows] == [
        ("main", 0), ("thread", 1), ("thread", 2), ("process", 1), ("process", 2)]
    assert all(r["samples_per_s"] > 0 for r in rows)
    flow = result["flow"]
    assert flow["size"] == [112, 112] and flow["frame_pairs"] > flow["videos"]
    assert all(flow[m]["frames_per_s"] > 0 and 0 <= flow[m]["epe_px"] < 3 for m in ("dis", "farneback"))
    assert result["tsn_flow_112"][0]["samples_per_s"] > 0
