"""Helpers shared by the frame-feature models (Attention Cluster, Attention LSTM, NeXtVLAD).

Every feature model takes ``features``: a list with one padded batch
(N, T, D_m) per modality (all modalities have the same frames) and
``lengths`` (N,) int64, the valid frames of each video (None: all T are
valid). Padded frames never change the output.
"""
import numpy

import framework
import framework.nn.functional as F
from framework import Tensor

__all__ = ["check_features", "frame_mask", "masked_softmax", "pack_frames", "unpack_frames"]


def check_features(features, feature_dims, who):
    """Raise one clear error unless ``features`` is a list of (N, T, D_m) batches matching ``feature_dims``."""
    if not isinstance(features, (list, tuple)) or len(features) != len(feature_dims):
        raise ValueError(f"{who}: expected a list of {len(feature_dims)} modality batches (N, T, D) with D = "
                         f"{list(feature_dims)}, got {type(features).__name__} of {len(features) if isinstance(features, (list, tuple)) else '?'}")
    shapes = [tuple(f.shape) for f in features]
    if any(len(s) != 3 or s[2] != d for s, d in zip(shapes, feature_dims)) or len({s[:2] for s in shapes}) != 1:
        raise ValueError(f"{who}: modality batches must be (N, T, D) with the same N, T and D = "
                         f"{list(feature_dims)}, got shapes {shapes}")


def frame_mask(lengths, num_frames, dtype="float32"):
    """(N, T) mask, 1 for the valid frames of each video; all ones when ``lengths`` is None (returns None)."""
    if lengths is None:
        return None
    return F.sequence_mask(lengths, maxlen=num_frames, dtype=dtype)


def masked_softmax(scores, mask, axis=1):
    """Softmax of ``scores`` (N, T, K) over time (``axis``) among the valid frames of ``mask`` (N, T) or None."""
    if mask is not None:
        valid = mask.astype("bool").unsqueeze(-1)                              # (N, T, 1)
        scores = framework.where(valid, scores, -1e9)
    return F.softmax(scores, axis=axis)


def pack_frames(x, lengths):
    """The valid frames of a padded batch, packed: x (N, T, D) -> ((P, D), index (N*T,) for unpacking).

    ``index`` maps each padded position to its packed row, or to P (a zero row) for padding.
    """
    n, t, d = x.shape
    flat = x.reshape([n * t, d])                                            # (N*T, D)
    if lengths is None:
        return flat, None
    if not isinstance(lengths, Tensor):
        lengths = framework.to_tensor(numpy.asarray(lengths), device=x.device)
    rows, index = F.packed_positions(lengths, t)
    return framework.gather(flat, rows, axis=0), index


def unpack_frames(packed, index, n, t):
    """Inverse of :func:`pack_frames`: packed (P, D) -> (N, T, D) with zeros at padded positions."""
    d = packed.shape[1]
    if index is None:
        return packed.reshape([n, t, d])                                    # (N, T, D)
    padded = framework.pad(packed, [(0, 1), (0, 0)])                        # (P + 1, D), last row zeros
    return framework.gather(padded, index, axis=0).reshape([n, t, d])       # (N, T, D)
