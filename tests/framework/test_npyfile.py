"""framework.npyfile.load_npy: the .npy reader loader threads share."""
import io
from concurrent.futures import ThreadPoolExecutor

import numpy
import pytest

from framework.npyfile import load_npy


def _npy(array, allow_pickle=False):
    buffer = io.BytesIO()
    numpy.save(buffer, array, allow_pickle=allow_pickle)
    return buffer.getvalue()


def test_many_threads_read_the_arrays_written():
    arrays = [numpy.arange(k * 6, dtype=numpy.float32).reshape(k, 6) for k in range(1, 17)]
    files = [_npy(a) for a in arrays]

    def read_all(_):
        return [load_npy(io.BytesIO(data)) for data in files * 50]

    with ThreadPoolExecutor(8) as pool:
        for loaded in pool.map(read_all, range(8)):
            for got, want in zip(loaded, arrays * 50):
                numpy.testing.assert_array_equal(got, want)
                assert got.dtype == want.dtype


def test_pickled_objects_are_refused():
    with pytest.raises(ValueError, match="pickle"):
        load_npy(io.BytesIO(_npy(numpy.array([{"a": 1}], dtype=object), allow_pickle=True)))
