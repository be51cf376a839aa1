"""framework.io datasets, samplers and collate functions."""
import collections
import pickle

import numpy
import pytest

from framework.io import (BatchSampler, BucketBatchSampler, CollateError, DistributedBatchSampler, ListDataset,
                          RandomSampler, SequenceCollator, SequentialSampler, TensorDataset, default_collate,
                          pad_sequences)


def test_tensor_dataset_tuples_and_dicts():
    x, y = numpy.arange(12).reshape(6, 2), numpy.arange(6)
    plain, named = TensorDataset(x, y), TensorDataset(x=x, y=y)
    assert len(plain) == len(named) == 6
    numpy.testing.assert_array_equal(plain[2][0], [4, 5])
    assert named[3]["y"] == 3 and set(named[3]) == {"x", "y"}


def test_tensor_dataset_rejects_mismatched_lengths():
    with pytest.raises(ValueError, match=r"share their first dimension, got shapes \(3,\), \(4,\)"):
        TensorDataset(numpy.zeros(3), numpy.zeros(4))


def test_list_dataset_applies_transform():
    data = ListDataset([{"v": 1}, {"v": 2}], transform=lambda s: {"v": s["v"] * 10})
    assert len(data) == 2 and data[1] == {"v": 20}


def test_sequential_and_random_samplers():
    assert list(SequentialSampler(4)) == [0, 1, 2, 3]
    sampler = RandomSampler(list(range(50)), seed=3)
    first = list(sampler)
    assert sorted(first) == list(range(50)) and list(sampler) == first
    sampler.set_epoch(1)
    assert list(sampler) != first
    assert list(RandomSampler(50, seed=4)) != first
    assert sampler.state_dict() == {"epoch": 1}


def test_batch_sampler_drop_last_and_len():
    keep, drop = BatchSampler(SequentialSampler(7), 3), BatchSampler(SequentialSampler(7), 3, drop_last=True)
    assert list(keep) == [[0, 1, 2], [3, 4, 5], [6]] and len(keep) == 3
    assert list(drop) == [[0, 1, 2], [3, 4, 5]] and len(drop) == 2
    with pytest.raises(ValueError, match="batch_size must be a positive integer"):
        BatchSampler(SequentialSampler(7), 0)


def _lengths(n=600, seed=0):
    return numpy.random.default_rng(seed).integers(1, 200, size=n)


def test_bucket_sampler_covers_every_index_once():
    sampler = BucketBatchSampler(_lengths(), batch_size=16, bucket_size=64, seed=1)
    batches = list(sampler)
    flat = [i for b in batches for i in b]
    assert sorted(flat) == list(range(600)) and len(batches) == len(sampler) == 38
    assert all(len(b) == 16 for b in batches if len(b) != 600 % 16)


def test_bucket_sampler_groups_similar_lengths():
    lengths = _lengths()
    bucketed = list(BucketBatchSampler(lengths, batch_size=16, bucket_size=64, seed=1))
    random = list(BatchSampler(RandomSampler(600, seed=1), 16))

    def padding(batches):
        return sum(lengths[b].max() * len(b) - lengths[b].sum() for b in batches)

    assert padding(bucketed) < padding(random) / 5
    spans = [lengths[b].max() - lengths[b].min() for b in bucketed]
    assert max(spans) < 60


def test_bucket_sampler_is_deterministic_per_seed_and_epoch():
    make = lambda seed: BucketBatchSampler(_lengths(), batch_size=16, num_buckets=5, seed=seed)  # noqa: E731
    a, b = make(7), make(7)
    assert list(a) == list(b)
    a.set_epoch(1)
    assert list(a) != list(b) and list(make(8)) != list(b)


def test_bucket_sampler_without_shuffle_is_sorted_and_drop_last():
    lengths = _lengths(100)
    batches = list(BucketBatchSampler(lengths, batch_size=8, shuffle=False, drop_last=True))
    flat = [i for b in batches for i in b]
    assert len(batches) == 12 and len(flat) == 96
    assert numpy.all(numpy.diff(lengths[flat]) >= 0)


def _shards(n, world_size, **kw):
    return [list(DistributedBatchSampler(n, batch_size=4, rank=r, world_size=world_size, **kw))
            for r in range(world_size)]


def test_distributed_shards_are_disjoint_and_cover():
    shards = _shards(24, 3, shuffle=True, seed=2)
    flats = [[i for b in s for i in b] for s in shards]
    assert all(not set(a) & set(b) for a in flats for b in flats if a is not b)
    assert sorted(sum(flats, [])) == list(range(24))


def test_distributed_pads_by_wrapping_around():
    shards = _shards(10, 4)
    flats = [[i for b in s for i in b] for s in shards]
    assert [len(f) for f in flats] == [3, 3, 3, 3]
    counts = collections.Counter(sum(flats, []))
    assert set(counts) == set(range(10)) and counts[0] == counts[1] == 2
    assert len(DistributedBatchSampler(10, 4, rank=0, world_size=4)) == 1


def test_distributed_drop_last_and_epochs():
    shards = _shards(10, 4, drop_last=True)
    assert all(len(s) == 0 for s in shards)
    sampler = DistributedBatchSampler(40, 4, rank=1, world_size=2, shuffle=True, seed=0)
    first = list(sampler)
    sampler.set_epoch(1)
    assert list(sampler) != first and len(sampler) == 5
    with pytest.raises(ValueError, match="rank 2 is outside world_size 2"):
        DistributedBatchSampler(10, 2, rank=2, world_size=2)


def test_default_collate_dicts_tuples_and_dtypes():
    samples = [{"x": numpy.full(3, i, dtype=numpy.float64), "label": i, "score": 0.5 * i, "ok": i % 2 == 0,
                "text": f"s{i}", "pair": (i, numpy.int32(i)), "ids": [i, i + 1]} for i in range(4)]
    batch = default_collate(samples)
    assert batch["x"].shape == (4, 3) and batch["x"].dtype == numpy.float64
    assert batch["label"].dtype == numpy.int64 and batch["score"].dtype == numpy.float32
    assert batch["ok"].dtype == numpy.bool_ and batch["text"] == ["s0", "s1", "s2", "s3"]
    assert isinstance(batch["pair"], tuple) and batch["pair"][1].dtype == numpy.int32
    numpy.testing.assert_array_equal(batch["ids"], [[0, 1], [1, 2], [2, 3], [3, 4]])


def test_default_collate_keeps_lists_of_words_and_dicts_as_lists():
    samples = [{"words": ["我们", "好"], "spans": []}, {"words": ["是"], "spans": [{"start": 0}]}]
    batch = default_collate(samples)
    assert batch == {"words": [["我们", "好"], ["是"]], "spans": [[], [{"start": 0}]]}


def test_default_collate_keeps_namedtuples():
    Pair = collections.namedtuple("Pair", "a b")
    batch = default_collate([Pair(1, 2.0), Pair(3, 4.0)])
    assert isinstance(batch, Pair) and batch.a.tolist() == [1, 3]


def test_default_collate_shape_mismatch_names_key_and_shapes():
    with pytest.raises(CollateError, match=r"sample\['tokens'\]: cannot stack .*\(2,\), \(3,\).*SequenceCollator"):
        default_collate([{"tokens": numpy.zeros(2)}, {"tokens": numpy.zeros(3)}])
    with pytest.raises(CollateError, match="do not all have 'label'"):
        default_collate([{"label": 1}, {"other": 2}])


def test_sequence_collator_pads_and_returns_lengths():
    samples = [{"tokens": [1, 2, 3], "tags": [0, 1, 2], "feats": numpy.ones((3, 2)), "label": 1},
               {"tokens": [4], "tags": [3], "feats": numpy.ones((1, 2)), "label": 0}]
    collate = SequenceCollator(["tokens", "tags", "feats"], pad_value={"tags": -1})
    batch = collate(samples)
    numpy.testing.assert_array_equal(batch["tokens"], [[1, 2, 3], [4, 0, 0]])
    numpy.testing.assert_array_equal(batch["tags"], [[0, 1, 2], [3, -1, -1]])
    assert batch["feats"].shape == (2, 3, 2) and batch["feats"][1, 1:].sum() == 0
    assert batch["tokens_lengths"].dtype == numpy.int64 and batch["tokens_lengths"].tolist() == [3, 1]
    assert batch["label"].tolist() == [1, 0]
    assert set(batch) == {"tokens", "tags", "feats", "label", "tokens_lengths", "tags_lengths", "feats_lengths"}
    assert pickle.loads(pickle.dumps(collate))(samples)["tokens"].shape == (2, 3)


def test_pad_sequences_handles_empty_and_rejects_bad_shapes():
    padded, lengths = pad_sequences([[1, 2], []], pad_value=9)
    assert padded.dtype == numpy.int64 and padded.tolist() == [[1, 2], [9, 9]] and lengths.tolist() == [2, 0]
    with pytest.raises(CollateError, match="trailing shapes"):
        pad_sequences([numpy.zeros((2, 3)), numpy.zeros((2, 4))])
    with pytest.raises(CollateError, match="key 'x'.*at least one dimension"):
        SequenceCollator("x")([{"x": 1}, {"x": 2}])
