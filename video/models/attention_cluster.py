"""Attention Cluster: multimodal set pooling with shifting attention.

Long, Gan, de Melo, Wu, Liu, Wen, "Attention Clusters: Purely Attention Based
Local Feature Integration for Video Classification", CVPR 2018; the layout of
PaddlePaddle's 2019 ``attention_cluster`` model (YouTube-8M: rgb 1024 + audio
128, 32 clusters each, FC1024-tanh, FC4096-tanh, 3862 sigmoid outputs).

Each modality has ``num_clusters`` attention units. Unit k scores every frame
with a 1x1 projection (a Linear over the feature axis), turns the scores into
weights with a softmax over time, pools the frames with them, then applies its
learnable scale and shift and L2-normalises the result divided by
sqrt(num_clusters) (the "shifting" operation). The units of all modalities are
concatenated and go through dropout, the fc-tanh layers and the classifier.
The pooling is a weighted set sum: it does not see the order of the frames.

Shapes: features [(N, T, D_m) per modality], lengths (N,) or None
-> logits (N, num_classes) (the task applies the sigmoid).
"""
import math

import framework
import framework.nn.functional as F
from framework import nn
from framework.nn import initializer as init
from framework.registry import MODELS
from vision.models.common import register_variant

from .feature_utils import check_features, frame_mask, masked_softmax

__all__ = ["ShiftingAttention", "AttentionCluster", "attention_cluster_youtube8m"]


class ShiftingAttention(nn.Layer):
    """``num_clusters`` shifting-attention units over one modality.

    Shapes: x (N, T, D), mask (N, T) or None -> (N, num_clusters * D).
    """

    def __init__(self, feature_dim: int, num_clusters: int):
        super().__init__()
        self.feature_dim, self.num_clusters = int(feature_dim), int(num_clusters)
        self.projection = nn.Linear(self.feature_dim, self.num_clusters)    # the 1x1 conv of the paper
        std = math.sqrt(1.0 / math.sqrt(self.num_clusters))                  # Paddle's "glorot" for the shift
        self.scale = self.create_parameter([self.num_clusters], default_initializer=init.Normal(0.0, std))
        self.shift = self.create_parameter([self.num_clusters], default_initializer=init.Normal(0.0, std))

    def forward(self, x, mask=None):
        n = x.shape[0]
        weights = masked_softmax(self.projection(x), mask, axis=1)          # (N, T, K), sums to 1 over T
        pooled = framework.matmul(weights, x, transpose_x=True)             # (N, K, D)
        shifted = pooled * self.scale.reshape([1, -1, 1]) + self.shift.reshape([1, -1, 1])  # (N, K, D)
        normed = F.normalize(shifted, axis=-1) / math.sqrt(self.num_clusters)
        return normed.reshape([n, self.num_clusters * self.feature_dim])   # (N, K*D)


@MODELS.register()
class AttentionCluster(nn.Layer):
    """Attention clusters per modality, concat, dropout, fc-tanh layers, classifier logits.

    Args:
        feature_dims: feature size of each modality, e.g. [1024, 128] (rgb, audio).
        num_clusters: attention units per modality, e.g. [32, 32].
        hidden_sizes: the fc-tanh layers, e.g. [1024, 4096].
        num_classes: output classes (sigmoid outputs in the task).
        dropout: dropout on the concatenated clusters while training.

    Shapes: forward(features [(N, T, D_m)], lengths (N,) or None) -> (N, num_classes).
    """

    def __init__(self, feature_dims: list = (1024, 128), num_clusters: list = (32, 32),
                 hidden_sizes: list = (1024, 4096), num_classes: int = 3862, dropout: float = 0.5):
        super().__init__()
        self.feature_dims = [int(d) for d in feature_dims]
        clusters = [int(k) for k in num_clusters]
        if len(clusters) != len(self.feature_dims) or not clusters or min(clusters + self.feature_dims) < 1:
            raise ValueError(f"AttentionCluster: need one positive cluster count per modality, got "
                             f"feature_dims {self.feature_dims} and num_clusters {clusters}")
        self.attentions = nn.LayerList([ShiftingAttention(d, k) for d, k in zip(self.feature_dims, clusters)])
        width = sum(d * k for d, k in zip(self.feature_dims, clusters))
        self.dropout = nn.Dropout(dropout) if dropout > 0 else None
        layers = []
        for size in hidden_sizes:
            layers += [nn.Linear(width, int(size)), nn.Tanh()]
            width = int(size)
        self.hidden = nn.Sequential(*layers)
        self.classifier = nn.Linear(width, int(num_classes))

    def forward(self, features, lengths=None):
        check_features(features, self.feature_dims, "AttentionCluster")
        mask = frame_mask(lengths, features[0].shape[1])
        out = framework.concat([att(x, mask) for att, x in zip(self.attentions, features)], axis=1)  # (N, sum K*D)
        if self.dropout is not None:
            out = self.dropout(out)
        return self.classifier(self.hidden(out))


attention_cluster_youtube8m = register_variant(
    "attention_cluster_youtube8m", AttentionCluster,
    "Attention Cluster as PaddlePaddle's 2019 YouTube-8M model: rgb 1024 + audio 128, 32 clusters each, "
    "FC1024-tanh, FC4096-tanh; other arguments as :class:`AttentionCluster`.",
    feature_dims=[1024, 128], num_clusters=[32, 32], hidden_sizes=[1024, 4096])
