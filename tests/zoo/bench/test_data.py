"""zoo.bench.data (``oar bench data``): the data-throughput pipelines produce the documented batches and rows."""
import numpy
import pytest

from framework.io import DataLoader, SequenceCollator
from zoo.bench.data import JpegDataset, TokenizeDataset, bench_loader


def test_tokenize_pipeline_and_bench_rows():
    data = TokenizeDataset(8, words_per_line=20)
    batch = next(iter(DataLoader(data, batch_size=4, collate_fn=SequenceCollator("ids"))))
    assert batch["ids"].shape[0] == 4 and batch["ids"].shape[1] == batch["ids_lengths"].max()
    rows = bench_loader(data, SequenceCollator("ids"), workers=(1, 2), worker_types=("thread",), batch_size=4,
                        samples_per_worker=8, repeat=1)
    assert [(r["worker_type"], r["num_workers"]) for r in rows] == [("main", 0), ("thread", 1), ("thread", 2)]
    assert all(r["samples_per_s"] > 0 for r in rows) and rows[1]["speedup"] == 1.0


def test_jpeg_pipeline_decodes_to_normalised_images():
    pytest.importorskip("cv2")
    sample = JpegDataset(2, size=32, distinct=2)[1]
    assert sample["image"].shape == (3, 32, 32) and sample["image"].dtype == numpy.float32
    assert abs(float(sample["image"].mean())) < 3
