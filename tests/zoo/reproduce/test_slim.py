"""The ``slim`` table of ``oar reproduce slim``: each compressed model's line against its targets, met or MISSED."""
from zoo.reproduce.slim import results_table, target_lines


def _row(name, made_from, macs, acc, ort_acc, static_ms, ort_ms, ort_rate, file_bytes, **extra):
    return {"name": name, "made_from": made_from, "params": 10, "macs": macs, "file_bytes": file_bytes,
            "test": {"acc": acc}, "test_onnxruntime": {"acc": ort_acc},
            "static": {"latency_ms": static_ms, "throughput": 100.0},
            "onnxruntime": {"latency_ms": ort_ms, "throughput": ort_rate}, **extra}


ROWS = [_row("m", "-", 1000, 0.90, 0.90, 10.0, 4.0, 100.0, 4000),
        _row("m_pruned", "m", 480, 0.895, 0.895, 6.0, 3.0, 150.0, 2000,
             speedup={"static": {"cpu": [1.67, 1.7], "wall": [1.0, 1.0]}, "onnxruntime": {"cpu": [1.61, 1.65], "wall": [1.0, 1.0]}}),
        _row("m_int8", "m", 1000, 0.899, 0.893, 11.0, 1.5, 250.0, 1000, float32_bytes=4000,
             speedup={"static": {"cpu": [0.9, 1.0], "wall": [1.0, 1.0]}, "onnxruntime": {"cpu": [2.67, 1.75], "wall": [1.0, 1.0]}}),
        _row("b", "-", 50, 0.80, 0.80, 1.0, 0.5, 1000.0, 3000),
        _row("b_distilled", "b", 50, 0.805, 0.805, 1.0, 0.5, 1000.0, 3000,
             speedup={"static": {"cpu": [1.0, 0.98], "wall": [1.0, 1.0]}, "onnxruntime": {"cpu": [1.0, 1.0], "wall": [1.0, 1.0]}})]


def test_each_target_is_marked():
    pruned, int8, distilled = target_lines(ROWS)
    assert pruned.startswith("- m_pruned: 52.0% of the multiply-adds removed (met")
    assert "acc -0.50 points (met" in pruned
    assert "static path 1.67x at batch 1, 1.70x at batch 64 (wall time 1.00x, 1.00x), in ONNX Runtime 1.61x at " \
        "batch 1, 1.65x at batch 64 (wall time 1.00x, 1.00x) (met, target 1.6x" in pruned
    assert "-0.10 points on oar, -0.70 in ONNX Runtime (MISSED" in int8
    assert "4.00x smaller than float32 (met" in int8
    assert "int8 vs float 2.67x at batch 1, 1.75x at batch 64 (wall time 1.00x, 1.00x) (MISSED, target 1.8x" in int8
    assert "acc +0.50 points over b trained alone (MISSED, target +1.0)" in distilled
    assert "static path 1.00x at batch 1, 0.98x at batch 64 (wall" in distilled


def test_a_pruned_model_slower_on_one_runtime_misses():
    slow = dict(ROWS[1], speedup={"static": {"cpu": [1.7, 1.7], "wall": [1.0, 1.0]}, "onnxruntime": {"cpu": [1.3, 1.7], "wall": [1.0, 1.0]}})
    assert "(MISSED, target 1.6x" in target_lines([ROWS[0], slow])[0]


def test_the_table_has_a_line_per_model_and_the_anchor():
    text = results_table(ROWS, "Command: `oar reproduce slim`.")
    assert text.startswith("| model |") and text.count("\n| ") == len(ROWS)
    assert "| m_int8 | m | 10 | 0.0 | 0.00 MB | 11.00, 100 | 1.50, 250 | acc 0.8990 | 0.8930 |" in text
    assert "PaddleSlim's published MobileNet V1" in text and text.endswith("Command: `oar reproduce slim`.")
