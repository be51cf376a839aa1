"""Data input: datasets, samplers, collate functions and the DataLoader.

Batches are NumPy arrays (dicts, tuples or lists of them, as the samples are);
the Trainer moves them to Tensors on the device. Files come by path or URL
(:mod:`framework.io.remote`, fsspec); large sets as tar shards (:mod:`framework.io.shards`).
"""
from .dataset import Dataset, IterableDataset, TensorDataset, ListDataset
from .sampler import (Sampler, SequentialSampler, RandomSampler, BatchSampler, BucketBatchSampler,
                      DistributedBatchSampler)
from .collate import default_collate, pad_sequences, SequenceCollator, CollateError
from .worker import DataLoaderError, sample_rng
from .loader import DataLoader
from .remote import RemoteFileError, open_file
from .shards import ShardDataset, ShardFormatError, write_shards

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "ListDataset", "Sampler", "SequentialSampler",
           "RandomSampler", "BatchSampler", "BucketBatchSampler", "DistributedBatchSampler", "default_collate",
           "pad_sequences", "SequenceCollator", "CollateError", "DataLoaderError", "sample_rng", "DataLoader",
           "RemoteFileError", "open_file", "ShardDataset", "ShardFormatError", "write_shards"]
