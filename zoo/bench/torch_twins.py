"""PyTorch twins of oar models that the benchmarks time beside ours.

Only :func:`torch_nextvlad` lives here (the ResNets are in
:mod:`vision.torch_reference`). PyTorch is imported inside the builder;
importing this module needs nothing.
"""

__all__ = ["torch_nextvlad"]


def torch_nextvlad(feature_dims=(1024, 128), num_clusters=128, expansion=2, groups=8, hidden_size=2048,
                   gating_reduction=8, num_classes=3862, dropout=0.5):
    """A ``torch.nn.Module`` with the layout of :class:`video.models.NeXtVLAD` and the same parameter count.

    Per modality: expansion fc, sigmoid group attention, cluster assignment
    (matrix, batch norm, softmax over clusters), VLAD residuals to the
    centres summed over frames and groups, L2 over each cluster's features,
    batch norm; then concat, dropout, fc (no bias) + batch norm, SE context
    gating and the classifier. Every frame is valid (no lengths). Weights are
    He-normal over the input size and the classifier Xavier-uniform, as oar
    initialises them; biases are zero.

    Shapes: forward([(N, T, D_m) per modality]) -> logits (N, num_classes).
    """
    import torch
    from torch import nn

    def he_normal(weight, fan_mode="fan_in"):
        """He normal over the input size: ``fan_in`` for (out, in) weights, ``fan_out`` for (in, out) matrices."""
        nn.init.kaiming_normal_(weight, mode=fan_mode, nonlinearity="relu")
        return weight

    def linear(cin, cout, bias=True):
        layer = nn.Linear(cin, cout, bias=bias)
        he_normal(layer.weight)
        if bias:
            nn.init.zeros_(layer.bias)
        return layer

    class Pooling(nn.Module):
        def __init__(self, feature_dim):
            super().__init__()
            expanded = expansion * feature_dim
            if expanded % groups:
                raise ValueError(f"torch_nextvlad: expansion * feature_dim = {expanded} must divide by groups "
                                 f"{groups}")
            self.group_dim = expanded // groups
            self.expand = linear(feature_dim, expanded)
            self.group_attention = linear(expanded, groups)
            self.cluster_weights = nn.Parameter(he_normal(torch.empty(expanded, groups * num_clusters), "fan_out"))
            self.assignment_norm = nn.BatchNorm1d(groups * num_clusters)
            self.centres = nn.Parameter(he_normal(torch.empty(num_clusters, self.group_dim), "fan_out"))
            self.vlad_norm = nn.BatchNorm1d(num_clusters * self.group_dim)

        def forward(self, x):
            n, t = x.shape[:2]
            expanded = self.expand(x.reshape(n * t, -1))                                   # (N*T, E*D)
            attention = torch.sigmoid(self.group_attention(expanded))                      # (N*T, G)
            logits = self.assignment_norm(expanded @ self.cluster_weights)                 # (N*T, G*K)
            assignment = torch.softmax(logits.view(-1, groups, num_clusters), dim=-1) * attention.unsqueeze(-1)
            assignment = assignment.reshape(n, t * groups, num_clusters)                   # (N, T*G, K)
            grouped = expanded.reshape(n, t * groups, self.group_dim)                      # (N, T*G, F')
            vlad = assignment.transpose(1, 2) @ grouped                                    # (N, K, F')
            vlad = vlad - assignment.sum(dim=1).unsqueeze(-1) * self.centres
            vlad = nn.functional.normalize(vlad, dim=-1)
            return self.vlad_norm(vlad.reshape(n, -1))                                     # (N, K*F')

    class NeXtVLAD(nn.Module):
        def __init__(self):
            super().__init__()
            self.poolings = nn.ModuleList([Pooling(d) for d in feature_dims])
            width = sum(num_clusters * p.group_dim for p in self.poolings)
            self.dropout = nn.Dropout(dropout)
            self.hidden = linear(width, hidden_size, bias=False)
            self.hidden_norm = nn.BatchNorm1d(hidden_size)
            self.squeeze = linear(hidden_size, hidden_size // gating_reduction, bias=False)
            self.gating_norm = nn.BatchNorm1d(hidden_size // gating_reduction)
            self.excite = linear(hidden_size // gating_reduction, hidden_size, bias=False)
            self.classifier = nn.Linear(hidden_size, num_classes)
            nn.init.xavier_uniform_(self.classifier.weight)
            nn.init.zeros_(self.classifier.bias)

        def forward(self, features):
            vlad = torch.cat([pool(x) for pool, x in zip(self.poolings, features)], dim=1)  # (N, W)
            hidden = self.hidden_norm(self.hidden(self.dropout(vlad)))                    # (N, H)
            gate = torch.sigmoid(self.excite(torch.relu(self.gating_norm(self.squeeze(hidden)))))
            return self.classifier(hidden * gate)

    return NeXtVLAD()
