"""to_static traces a new signature on a small example cut from the call (never the caller's whole batch), and with
``cache_dir`` keeps the program on disk: the next layer with the same weights loads it instead of tracing, a cut or
changed entry is refused with a warning and traced again, and a folder that cannot be written only costs the cache."""
import os

import numpy
import pytest

import framework
from framework import Tensor, jit, nn, no_grad
from framework.jit.cache import ProgramCacheWarning, entry_path, store_entry
from framework.jit.static import EXAMPLE_ROWS


class Recording(nn.Layer):
    """A small network that records the batch size of every forward call it runs (eager or while tracing)."""

    def __init__(self, seed=0):
        super().__init__()
        framework.seed(seed)
        self.fc = nn.Linear(4, 3)
        self.rows = []

    def forward(self, x, lengths):
        self.rows.append(x.shape[0])
        return framework.tanh(self.fc(x)).sum(axis=2) * lengths.astype("float32").reshape(-1, 1)    # (N, T)


AXES = {"x": {0: "batch", 1: "seq"}, "lengths": {0: "batch"}}


def _inputs(n, t=6, seed=1):
    rng = numpy.random.default_rng(seed)
    return (Tensor(rng.standard_normal((n, t, 4)).astype(numpy.float32)),
            Tensor(rng.integers(1, t + 1, size=n).astype(numpy.int64)))


def _eager(layer, inputs):
    with no_grad():
        return layer(*inputs).data


def test_a_big_first_call_is_traced_on_two_of_its_rows():
    layer = Recording()
    static = jit.to_static(layer, dynamic_axes=AXES)
    static.eval()
    inputs = _inputs(5000)
    out = static(*inputs)
    assert layer.rows and max(layer.rows) <= EXAMPLE_ROWS + 2     # the example, then grown by one and by two
    layer.rows.clear()
    numpy.testing.assert_array_equal(out.data, _eager(layer, inputs))
    assert static(*_inputs(3, t=9)).shape == (3, 9) and len(static.programs) == 1


def test_a_cached_program_loads_in_a_new_layer_without_tracing_and_equals_a_fresh_trace(tmp_path):
    first = jit.to_static(Recording(), dynamic_axes=AXES, cache_dir=str(tmp_path))
    first.eval()
    inputs = _inputs(40)
    traced = first(*inputs).data
    assert len(os.listdir(tmp_path)) == 1
    again = Recording()                                # same seed: the same weights
    cached = jit.to_static(again, dynamic_axes=AXES, cache_dir=str(tmp_path))
    cached.eval()
    loaded = cached(*inputs).data
    assert again.rows == []                            # loaded, not traced
    numpy.testing.assert_array_equal(loaded, traced)
    numpy.testing.assert_array_equal(loaded, _eager(again, inputs))
    other = jit.to_static(Recording(seed=5), dynamic_axes=AXES, cache_dir=str(tmp_path))
    other.eval()
    other(*inputs)
    assert other.layer.rows and len(os.listdir(tmp_path)) == 2      # other weights: another entry


def test_a_corrupted_entry_is_refused_with_a_warning_and_traced_again(tmp_path):
    static = jit.to_static(Recording(), dynamic_axes=AXES, cache_dir=str(tmp_path))
    static.eval()
    inputs = _inputs(10)
    expected = static(*inputs).data
    (entry,) = os.listdir(tmp_path)
    weights = tmp_path / entry / "weights.npz"
    weights.write_bytes(weights.read_bytes()[:100])                  # cut short
    layer = Recording()
    fresh = jit.to_static(layer, dynamic_axes=AXES, cache_dir=str(tmp_path))
    fresh.eval()
    with pytest.warns(ProgramCacheWarning, match="did not load"):
        out = fresh(*inputs).data
    assert layer.rows                                                # traced again
    numpy.testing.assert_array_equal(out, expected)
    graph = tmp_path / entry / "program.json"
    graph.write_text(graph.read_text().replace("framework.ops", "os.system"))
    layer = Recording()
    edited = jit.to_static(layer, dynamic_axes=AXES, cache_dir=str(tmp_path))
    edited.eval()
    with pytest.warns(ProgramCacheWarning, match="not an op of the framework"):
        numpy.testing.assert_array_equal(edited(*inputs).data, expected)


def test_a_cache_folder_that_cannot_be_written_only_costs_the_cache(tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder")
    static = jit.to_static(Recording(), dynamic_axes=AXES, cache_dir=str(blocker / "programs"))
    static.eval()
    inputs = _inputs(4)
    with pytest.warns(ProgramCacheWarning, match="cannot write the program cache"):
        out = static(*inputs).data
    numpy.testing.assert_array_equal(out, _eager(static.layer, inputs))


def test_an_entry_is_written_once_and_leaves_no_scratch_folders(tmp_path):
    static = jit.to_static(Recording(), dynamic_axes=AXES)
    static.eval()
    inputs = _inputs(3)
    static(*inputs)
    (program,) = static.programs.values()
    path = entry_path(str(tmp_path), "digest", ("signature",), jit.EXACT_PASSES)
    store_entry(program, path)
    before = sorted(os.listdir(path))
    stamp = os.stat(os.path.join(path, "program.json")).st_mtime_ns
    store_entry(program, path)                        # a second writer (another process) keeps the first copy
    assert sorted(os.listdir(path)) == before and os.listdir(tmp_path) == [os.path.basename(path)]
    assert os.stat(os.path.join(path, "program.json")).st_mtime_ns == stamp


def test_a_loaded_program_keeps_its_slot_shapes_for_export_and_the_passes(tmp_path):
    static = jit.to_static(Recording(), dynamic_axes=AXES)
    static.eval()
    static(*_inputs(3))
    (program,) = static.programs.values()
    jit.save(program, str(tmp_path / "p"))
    loaded = jit.load(str(tmp_path / "p"))
    assert loaded.slot_specs == {slot: (tuple(shape), numpy.dtype(dtype))
                                 for slot, (shape, dtype) in program.slot_specs.items()}
    from framework import onnx
    onnx.export(loaded, str(tmp_path / "loaded.onnx"))          # needs every slot's rank and dtype
    assert (tmp_path / "loaded.onnx").stat().st_size > 0
