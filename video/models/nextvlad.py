"""NeXtVLAD: grouped, attention-weighted VLAD pooling of frame features.

Lin, Xiao, Fan, "NeXtVLAD: An Efficient Neural Network to Aggregate Frame-level
Features for Large-scale Video Classification", ECCV 2018 workshops; the
layout of PaddlePaddle's 2019 ``nextvlad`` model (YouTube-8M: rgb 1024 + audio
128, expansion 2, groups 8, 128 clusters, hidden 2048, gating reduction 8).

Per modality (feature size D, expansion E, groups G, clusters K, F' = E*D/G):
each frame is expanded by an fc to E*D; a sigmoid fc gives one attention per
group; a matrix (E*D, G*K) followed by batch norm (over the valid frames) and
a softmax over the K clusters gives the soft assignment of each group of each
frame. The VLAD is sum over frames and groups of attention * assignment *
(group features - cluster centre) (K, F'), L2-normalised over F', flattened
and batch-normalised. The modalities' VLADs are concatenated, go through
dropout, an fc (no bias) + batch norm to ``hidden_size``, SE context gating
(fc to hidden/reduction, batch norm, ReLU, fc back, sigmoid, multiply) and the
classifier. VLAD sums over frames: it does not see their order.

Shapes: features [(N, T, D_m) per modality], lengths (N,) or None
-> logits (N, num_classes) (the task applies the sigmoid).
"""
import framework
import framework.nn.functional as F
from framework import nn
from framework.nn import initializer as init
from framework.registry import MODELS
from vision.models.common import register_variant

from .feature_utils import check_features, pack_frames, unpack_frames

__all__ = ["NeXtVLADPooling", "ContextGating", "NeXtVLAD", "nextvlad_youtube8m"]


class NeXtVLADPooling(nn.Layer):
    """NeXtVLAD of one modality.

    Shapes: x (N, T, feature_dim), lengths (N,) or None -> (N, num_clusters * feature_dim * expansion / groups).
    """

    def __init__(self, feature_dim: int, num_clusters: int, expansion: int, groups: int):
        super().__init__()
        self.feature_dim, self.num_clusters = int(feature_dim), int(num_clusters)
        self.expansion, self.groups = int(expansion), int(groups)
        expanded = self.expansion * self.feature_dim
        if expanded % self.groups:
            raise ValueError(f"NeXtVLADPooling: expansion * feature_dim = {expanded} must divide by groups "
                             f"{self.groups}")
        self.group_dim = expanded // self.groups
        msra = init.KaimingNormal()
        self.expand = nn.Linear(self.feature_dim, expanded, weight_attr=msra)
        self.group_attention = nn.Linear(expanded, self.groups, weight_attr=msra)
        self.cluster_weights = self.create_parameter([expanded, self.groups * self.num_clusters],
                                                     default_initializer=msra)
        self.assignment_norm = nn.BatchNorm1D(self.groups * self.num_clusters)
        self.centres = self.create_parameter([self.num_clusters, self.group_dim], default_initializer=msra)
        self.vlad_norm = nn.BatchNorm1D(self.num_clusters * self.group_dim)
        self.output_dim = self.num_clusters * self.group_dim

    def forward(self, x, lengths=None):
        n, t = x.shape[0], x.shape[1]
        g, k = self.groups, self.num_clusters
        frames, index = pack_frames(x, lengths)                             # (P, D): the valid frames only
        expanded = self.expand(frames)                                      # (P, E*D)
        attention = F.sigmoid(self.group_attention(expanded))               # (P, G)
        logits = self.assignment_norm(framework.matmul(expanded, self.cluster_weights))  # (P, G*K)
        assignment = F.softmax(logits.reshape([-1, g, k]), axis=-1) * attention.unsqueeze(-1)  # (P, G, K)
        assignment = unpack_frames(assignment.reshape([-1, g * k]), index, n, t)  # (N, T, G*K), 0 at padding
        assignment = assignment.reshape([n, t * g, k])                      # (N, T*G, K)
        grouped = unpack_frames(expanded, index, n, t).reshape([n, t * g, self.group_dim])  # (N, T*G, F')
        vlad = framework.matmul(assignment, grouped, transpose_x=True)      # (N, K, F')
        vlad = vlad - assignment.sum(axis=1).unsqueeze(-1) * self.centres   # (N, K, F')
        vlad = F.normalize(vlad, axis=-1)                                   # L2 over F' for each cluster
        return self.vlad_norm(vlad.reshape([n, self.output_dim]))           # (N, K*F')


class ContextGating(nn.Layer):
    """SE context gating: x * sigmoid(fc(relu(bn(fc(x))))) with a ``reduction`` bottleneck.

    Shapes: x (N, C) -> (N, C).
    """

    def __init__(self, channels: int, reduction: int):
        super().__init__()
        msra = init.KaimingNormal()
        self.squeeze = nn.Linear(channels, channels // reduction, weight_attr=msra, bias_attr=False)
        self.norm = nn.BatchNorm1D(channels // reduction)
        self.excite = nn.Linear(channels // reduction, channels, weight_attr=msra, bias_attr=False)

    def forward(self, x):
        return x * F.sigmoid(self.excite(F.relu(self.norm(self.squeeze(x)))))


@MODELS.register()
class NeXtVLAD(nn.Layer):
    """NeXtVLAD per modality, concat, dropout, fc + BN, SE context gating, classifier logits.

    Args:
        feature_dims: feature size of each modality, e.g. [1024, 128].
        num_clusters: VLAD clusters (128).
        expansion: feature expansion factor (2).
        groups: feature groups (8).
        hidden_size: the fc after the VLADs (2048).
        gating_reduction: bottleneck ratio of the context gating (8).
        num_classes: output classes.
        dropout: dropout on the concatenated VLADs while training.

    Shapes: forward(features [(N, T, D_m)], lengths (N,) or None) -> (N, num_classes).
    """

    def __init__(self, feature_dims: list = (1024, 128), num_clusters: int = 128, expansion: int = 2,
                 groups: int = 8, hidden_size: int = 2048, gating_reduction: int = 8, num_classes: int = 3862,
                 dropout: float = 0.5):
        super().__init__()
        self.feature_dims = [int(d) for d in feature_dims]
        if not self.feature_dims or min(self.feature_dims) < 1 or hidden_size < gating_reduction:
            raise ValueError(f"NeXtVLAD: need positive feature_dims and hidden_size >= gating_reduction, got "
                             f"{self.feature_dims}, {hidden_size}, {gating_reduction}")
        self.poolings = nn.LayerList([NeXtVLADPooling(d, num_clusters, expansion, groups)
                                      for d in self.feature_dims])
        width = sum(p.output_dim for p in self.poolings)
        self.dropout = nn.Dropout(dropout) if dropout > 0 else None
        self.hidden = nn.Linear(width, int(hidden_size), weight_attr=init.KaimingNormal(), bias_attr=False)
        self.hidden_norm = nn.BatchNorm1D(int(hidden_size))
        self.gating = ContextGating(int(hidden_size), int(gating_reduction))
        self.classifier = nn.Linear(int(hidden_size), int(num_classes))

    def forward(self, features, lengths=None):
        check_features(features, self.feature_dims, "NeXtVLAD")
        vlad = framework.concat([pool(x, lengths) for pool, x in zip(self.poolings, features)], axis=1)  # (N, W)
        if self.dropout is not None:
            vlad = self.dropout(vlad)
        return self.classifier(self.gating(self.hidden_norm(self.hidden(vlad))))


nextvlad_youtube8m = register_variant(
    "nextvlad_youtube8m", NeXtVLAD,
    "NeXtVLAD as PaddlePaddle's 2019 YouTube-8M model: rgb 1024 + audio 128, 128 clusters, expansion 2, "
    "8 groups, hidden 2048, gating reduction 8; other arguments as :class:`NeXtVLAD`.",
    feature_dims=[1024, 128], num_clusters=128, expansion=2, groups=8, hidden_size=2048, gating_reduction=8)
