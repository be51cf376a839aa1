"""zoo.bench.torch_twins: each PyTorch twin has the parameters of the oar model it stands for and computes what
it says; without PyTorch, importing the module needs nothing and a builder names what is missing."""
import itertools
import sys

import numpy
import pytest

import framework
from nlp.lac.model import BiGRUCRF
from nlp.senta.model import SentaBiLSTM, SentaCNN
from video.models import AttentionCluster, AttentionLSTM, NeXtVLAD
from vision.models import ResNet
from zoo.bench import torch_twins
from zoo.bench.torch_twins import torch_nextvlad

TINY_NEXTVLAD = {"feature_dims": [6, 4], "num_clusters": 4, "expansion": 2, "groups": 2, "hidden_size": 8,
                 "gating_reduction": 2, "num_classes": 5}
TINY_CLUSTER = {"feature_dims": [6, 4], "num_clusters": [3, 2], "hidden_sizes": [8, 5], "num_classes": 7}
TINY_LSTM = {"feature_dims": [6, 4], "embedding_size": 5, "lstm_size": 3, "hidden_sizes": [8, 5], "num_classes": 7}
PAIRS = {  # name -> (oar model, twin builder call) at tiny sizes
    "lac": (lambda: BiGRUCRF(30, 5, emb_dim=8, hidden=6), lambda: torch_twins.torch_lac(30, 5, emb_dim=8, hidden=6)),
    "senta_bilstm": (lambda: SentaBiLSTM(30, emb_dim=8, hidden=6, hidden2=4),
                     lambda: torch_twins.torch_senta("bilstm", 30, 8, 6, 4)),
    "senta_cnn": (lambda: SentaCNN(30, emb_dim=8, filters=6, hidden2=4),
                  lambda: torch_twins.torch_senta("cnn", 30, 8, 6, 4)),
    "attention_cluster": (lambda: AttentionCluster(**TINY_CLUSTER),
                          lambda: torch_twins.torch_attention_cluster(**TINY_CLUSTER)),
    "attention_lstm": (lambda: AttentionLSTM(**TINY_LSTM), lambda: torch_twins.torch_attention_lstm(**TINY_LSTM)),
    "nextvlad": (lambda: NeXtVLAD(**TINY_NEXTVLAD), lambda: torch_nextvlad(**TINY_NEXTVLAD)),
}


def _sizes(tensors):
    return sorted(int(numpy.prod(t.shape)) for t in tensors)


@pytest.mark.parametrize("name", sorted(PAIRS))
def test_twin_has_the_parameter_shapes_of_its_oar_model(name):
    pytest.importorskip("torch")
    ours, twin = (build() for build in PAIRS[name])
    assert _sizes(ours.parameters()) == _sizes(twin.parameters())


def test_resnet_twin_state_dict_has_oar_names_and_shapes():
    pytest.importorskip("torch")
    ours = ResNet("basic", [1, 1, 1, 1], num_classes=4, base_channels=4)
    twin = torch_twins.torch_resnet("basic", (1, 1, 1, 1), num_classes=4, base_channels=4)
    twin_shapes = {k: tuple(v.shape) for k, v in twin.state_dict().items() if not k.endswith("num_batches_tracked")}
    assert twin_shapes == {k: tuple(v.shape) for k, v in ours.state_dict().items()}


def test_tsm_twin_averages_frame_scores_and_shifts_only_when_asked():
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    tsn = torch_twins.torch_tsm(False, segments=2, num_classes=5)
    tsm = torch_twins.torch_tsm(True, segments=2, num_classes=5)
    tsm.load_state_dict(tsn.state_dict())
    clips = torch.randn(1, 2, 3, 32, 32)
    with torch.no_grad():
        tsn.eval(), tsm.eval()
        frames = tsn.net(clips[0])                                  # (2, 5): one score row per frame
        torch.testing.assert_close(tsn(clips), frames.mean(0, keepdim=True))
        assert tsm(clips).shape == (1, 5) and not torch.allclose(tsm(clips), tsn(clips))


def test_lac_twin_nll_is_the_crf_negative_log_likelihood():
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    num_tags, length = 3, 3
    twin = torch_twins.torch_lac(10, num_tags, emb_dim=4, hidden=3, num_layers=1)
    scores = torch.randn(2, length, num_tags, dtype=torch.float64)
    labels = torch.tensor([[0, 2, 1], [1, 1, 0]])
    transition = twin.transition.detach().double()
    start, stop, trans = transition[0], transition[1], transition[2:]

    def path_score(n, path):
        return (start[path[0]] + stop[path[-1]] + sum(scores[n, t, tag] for t, tag in enumerate(path))
                + sum(trans[a, b] for a, b in zip(path, path[1:])))

    expected = []
    for n in range(2):
        every = torch.stack([path_score(n, p) for p in itertools.product(range(num_tags), repeat=length)])
        expected.append(torch.logsumexp(every, 0) - path_score(n, labels[n].tolist()))
    with torch.no_grad():
        twin.transition.data = transition
        torch.testing.assert_close(twin.nll(scores, labels), torch.stack(expected).mean())
    assert twin(torch.tensor([[1, 2, 3]])).shape == (1, 3, num_tags)


def test_torch_nextvlad_twin_has_oar_parameters_and_output_shape():
    torch = pytest.importorskip("torch")
    ours, twin = NeXtVLAD(**TINY_NEXTVLAD), torch_nextvlad(**TINY_NEXTVLAD)
    assert _sizes(ours.parameters()) == _sizes(twin.parameters())
    assert sum(p.numel() for p in twin.parameters()) == sum(p.size for p in ours.parameters())
    features = [torch.randn(3, 7, d) for d in TINY_NEXTVLAD["feature_dims"]]
    logits = twin.train()(features)
    assert logits.shape == (3, 5) and bool(torch.isfinite(logits).all())
    ours_logits = ours([framework.to_tensor(f.numpy()) for f in features])
    assert ours_logits.shape == (3, 5)


def test_torch_nextvlad_twin_at_full_size_has_the_2019_parameter_count():
    torch = pytest.importorskip("torch")
    with torch.device("meta"):  # shapes only, no memory
        twin = torch_nextvlad()
    assert sum(p.numel() for p in twin.parameters()) == 89_088_550


def test_blas_threads_are_given_to_torch(monkeypatch):
    torch = pytest.importorskip("torch")
    before = torch.get_num_threads()
    try:
        monkeypatch.setenv("OPENBLAS_NUM_THREADS", "1")
        assert torch_twins.match_blas_threads(torch, default=2) == 1
        monkeypatch.delenv("OPENBLAS_NUM_THREADS")
        assert torch_twins.match_blas_threads(torch) == 1            # unset and no default: left as it is
    finally:
        torch.set_num_threads(before)


def test_without_torch_the_builders_say_what_is_missing(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)                 # `import torch` now fails
    assert torch_twins.torch_or_none() is None
    for build in (torch_twins.require_torch, lambda: torch_twins.torch_resnet("basic", (1, 1, 1, 1)),
                  lambda: torch_twins.torch_senta("cnn", 5, 2, 2, 2), lambda: torch_nextvlad()):
        with pytest.raises(ImportError, match="need PyTorch, which is not installed"):
            build()
