"""The ``slim`` table of ``oar reproduce slim``: each compressed model's line against its targets, met or MISSED."""
from zoo.reproduce.slim import results_table, target_lines


def _row(name, made_from, macs, acc, ort_acc, static_ms, ort_ms, ort_rate, file_bytes, **extra):
    return {"name": name, "made_from": made_from, "params": 10, "macs": macs, "file_bytes": file_bytes,
            "test": {"acc": acc}, "test_onnxruntime": {"acc": ort_acc},
            "static": {"latency_ms": static_ms, "throughput": 100.0},
            "onnxruntime": {"latency_ms": ort_ms, "throughput": ort_rate}, **extra}


ROWS = [_row("m", "-", 1000, 0.90, 0.90, 10.0, 4.0, 100.0, 4000),
        _row("m_pruned", "m", 480, 0.895, 0.895, 6.0, 3.0, 150.0, 2000),
        _row("m_int8", "m", 1000, 0.899, 0.893, 11.0, 1.5, 250.0, 1000, float32_bytes=4000),
        _row("b", "-", 50, 0.80, 0.80, 1.0, 0.5, 1000.0, 3000),
        _row("b_distilled", "b", 50, 0.805, 0.805, 1.0, 0.5, 1000.0, 3000)]


def test_each_target_is_marked():
    pruned, int8, distilled = target_lines(ROWS)
    assert pruned.startswith("- m_pruned: 52.0% of the multiply-adds removed (met")
    assert "acc -0.50 points (met" in pruned and "1.67x faster (met" in pruned
    assert "-0.10 points on oar, -0.70 in ONNX Runtime (MISSED" in int8
    assert "4.00x smaller than float32 (met" in int8 and "2.67x at batch 1, 2.50x at batch 64 (met" in int8
    assert "acc +0.50 points over b trained alone (MISSED, target +1.0)" in distilled


def test_the_table_has_a_line_per_model_and_the_anchor():
    text = results_table(ROWS, "Command: `oar reproduce slim`.")
    assert text.startswith("| model |") and text.count("\n| ") == len(ROWS)
    assert "| m_int8 | m | 10 | 0.0 | 0.00 MB | 11.00, 100 | 1.50, 250 | acc 0.8990 | 0.8930 |" in text
    assert "PaddleSlim's published MobileNet V1" in text and text.endswith("Command: `oar reproduce slim`.")
