"""PyTorch twins of oar models: the reference networks that ``oar bench`` times beside ours and tests compare with.

Every PyTorch model the project measures itself against lives here: the
ResNets (:func:`torch_resnet`) and TSN/TSM on them (:func:`torch_tsm`), the
LAC BiGRU-CRF (:func:`torch_lac`), Senta's BiLSTM and CNN
(:func:`torch_senta`), SimNet's BOW (:func:`torch_simnet_bow`), SSD-MobileNetV1
(:func:`torch_ssd_mobilenet_v1`), and the three YouTube-8M feature models
(:func:`torch_attention_cluster`, :func:`torch_attention_lstm`,
:func:`torch_nextvlad`). PyTorch is never a dependency: it is imported in one
place, :func:`torch_or_none`, on first use, so importing this module needs
nothing; a builder called without PyTorch raises an ImportError that says so.
"""
import os

__all__ = ["TORCH_MISSING", "torch_or_none", "require_torch", "match_blas_threads", "blas_info", "torch_resnet",
           "torch_tsm", "torch_lac", "torch_senta", "torch_simnet_bow", "torch_attention_cluster", "torch_attention_lstm", "torch_nextvlad",
           "torch_ssd_mobilenet_v1"]

TORCH_MISSING = "the PyTorch reference models need PyTorch, which is not installed (pip install torch)"


def torch_or_none():
    """The ``torch`` module, or None when PyTorch is not installed (the one import of torch in the project's code)."""
    try:
        import torch
    except ImportError:
        return None
    return torch


def require_torch():
    """The ``torch`` module; an ImportError naming what is missing when PyTorch is not installed."""
    torch = torch_or_none()
    if torch is None:
        raise ImportError(TORCH_MISSING)
    return torch


def match_blas_threads(torch, default=None):
    """Give PyTorch as many CPU threads as ``OPENBLAS_NUM_THREADS`` gives NumPy's BLAS; returns PyTorch's count.

    When the variable is unset, ``default`` threads (None: PyTorch's own default is kept).
    """
    threads = os.environ.get("OPENBLAS_NUM_THREADS") or default
    if threads:
        torch.set_num_threads(int(threads))
    return torch.get_num_threads()


def torch_resnet(block="bottleneck", layers=(3, 4, 6, 3), num_classes=1000, base_channels=64):
    """A ``torch.nn.Module`` ResNet: images (N, 3, H, W) -> logits (N, num_classes).

    torchvision's definition, without torchvision: module names, parameter
    names and shapes equal torchvision's ``resnet*`` (``conv1``, ``bn1``,
    ``layer1.0.conv1``, ``layer1.0.downsample.0``, ``fc``), so state dicts move
    between it and :class:`vision.models.ResNet` unchanged.

    ``block`` is "basic" or "bottleneck"; ``layers`` the blocks per stage
    (4 stages, strides 1, 2, 2, 2); ``base_channels`` the stem width (64 in
    torchvision). Initialised as torchvision (He normal, fan-out, for convs).
    """
    torch = require_torch()
    nn = torch.nn

    def conv(cin, cout, k, stride=1):
        return nn.Conv2d(cin, cout, k, stride=stride, padding=(k - 1) // 2, bias=False)

    class BasicBlock(nn.Module):
        expansion = 1

        def __init__(self, cin, c, stride, downsample):
            super().__init__()
            self.conv1, self.bn1 = conv(cin, c, 3, stride), nn.BatchNorm2d(c)
            self.conv2, self.bn2 = conv(c, c, 3), nn.BatchNorm2d(c)
            self.relu, self.downsample = nn.ReLU(inplace=True), downsample

        def forward(self, x):
            shortcut = x if self.downsample is None else self.downsample(x)
            out = self.relu(self.bn1(self.conv1(x)))
            return self.relu(self.bn2(self.conv2(out)) + shortcut)

    class Bottleneck(nn.Module):
        expansion = 4

        def __init__(self, cin, c, stride, downsample):
            super().__init__()
            self.conv1, self.bn1 = conv(cin, c, 1), nn.BatchNorm2d(c)
            self.conv2, self.bn2 = conv(c, c, 3, stride), nn.BatchNorm2d(c)
            self.conv3, self.bn3 = conv(c, c * 4, 1), nn.BatchNorm2d(c * 4)
            self.relu, self.downsample = nn.ReLU(inplace=True), downsample

        def forward(self, x):
            shortcut = x if self.downsample is None else self.downsample(x)
            out = self.relu(self.bn1(self.conv1(x)))
            out = self.relu(self.bn2(self.conv2(out)))
            return self.relu(self.bn3(self.conv3(out)) + shortcut)

    class ResNet(nn.Module):
        def __init__(self):
            super().__init__()
            unit = {"basic": BasicBlock, "bottleneck": Bottleneck}[block]
            self.conv1 = nn.Conv2d(3, base_channels, 7, stride=2, padding=3, bias=False)
            self.bn1, self.relu = nn.BatchNorm2d(base_channels), nn.ReLU(inplace=True)
            self.maxpool = nn.MaxPool2d(3, stride=2, padding=1)
            cin = base_channels
            for i, (blocks, stride) in enumerate(zip(layers, (1, 2, 2, 2))):
                c = base_channels * 2 ** i
                downsample = None
                if stride != 1 or cin != c * unit.expansion:
                    downsample = nn.Sequential(conv(cin, c * unit.expansion, 1, stride),
                                               nn.BatchNorm2d(c * unit.expansion))
                stage = [unit(cin, c, stride, downsample)]
                cin = c * unit.expansion
                stage += [unit(cin, c, 1, None) for _ in range(blocks - 1)]
                setattr(self, f"layer{i + 1}", nn.Sequential(*stage))
            self.avgpool = nn.AdaptiveAvgPool2d(1)
            self.fc = nn.Linear(cin, num_classes)
            for m in self.modules():
                if isinstance(m, nn.Conv2d):
                    nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")

        def forward(self, x):
            x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
            for name in ("layer1", "layer2", "layer3", "layer4"):
                x = getattr(self, name)(x)
            return self.fc(torch.flatten(self.avgpool(x), 1))

    return ResNet()


def torch_tsm(shift, segments=8, num_classes=400):
    """PyTorch TSN-R50, or TSM-R50 when ``shift``: clips (B, ``segments``, 3, H, W) -> logits (B, num_classes).

    The ResNet-50 of :func:`torch_resnet` runs on every frame and the frame
    scores are averaged (TSN's consensus). TSM adds the official residual
    shift (1/8 of the channels one frame back, 1/8 one frame forward) as a
    pre-hook on the first convolution of every block.
    """
    torch = require_torch()
    net = torch_resnet(num_classes=num_classes)

    def residual_shift(module, inputs):
        x = inputs[0]
        nt, c, h, w = x.shape
        x = x.view(nt // segments, segments, c, h, w)                                 # (B, T, C, H, W)
        fold = c // 8
        out = torch.zeros_like(x)
        out[:, 1:, :fold] = x[:, :-1, :fold]
        out[:, :-1, fold:2 * fold] = x[:, 1:, fold:2 * fold]
        out[:, :, 2 * fold:] = x[:, :, 2 * fold:]
        return (out.view(nt, c, h, w),)                                               # (B*T, C, H, W)

    if shift:
        for stage in (net.layer1, net.layer2, net.layer3, net.layer4):
            for block in stage:
                block.conv1.register_forward_pre_hook(residual_shift)

    class Clips(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.net = net

        def forward(self, clips):
            b, t = clips.shape[:2]
            return self.net(clips.flatten(0, 1)).view(b, t, -1).mean(1)  # average consensus of the frame scores
    return Clips()


def torch_lac(vocab_size, num_tags, emb_dim=128, hidden=128, num_layers=2, device="cpu"):
    """The LAC BiGRU-CRF in PyTorch (``nn.Embedding``, ``nn.GRU``, ``nn.Linear`` and the CRF written here).

    ``forward(tokens)``: ids (N, T) -> emission scores (N, T, num_tags);
    ``nll(scores, labels)``: the mean CRF negative log-likelihood over full-length
    sequences (forward algorithm minus the gold path score). The transition
    matrix is (num_tags + 2, num_tags): start row, stop row, then tag to tag,
    as in :class:`nlp.lac.model.BiGRUCRF`. ``device``: a torch device, where
    every parameter is made.
    """
    torch = require_torch()
    nn = torch.nn

    class BiGRUCRF(nn.Module):
        def __init__(self):
            super().__init__()
            self.embedding = nn.Embedding(vocab_size, emb_dim).to(device)
            self.gru = nn.GRU(emb_dim, hidden, num_layers=num_layers, bidirectional=True, batch_first=True).to(device)
            self.emission = nn.Linear(2 * hidden, num_tags).to(device)
            self.transition = nn.Parameter(0.1 * torch.randn(num_tags + 2, num_tags, device=device))

        def forward(self, tokens):
            return self.emission(self.gru(self.embedding(tokens))[0])                 # (N, T, num_tags)

        def nll(self, scores, labels):
            start, stop, trans = self.transition[0], self.transition[1], self.transition[2:]
            alpha = start + scores[:, 0]                                              # (N, num_tags)
            for t in range(1, scores.shape[1]):
                alpha = torch.logsumexp(alpha[:, :, None] + trans, dim=1) + scores[:, t]
            log_z = torch.logsumexp(alpha + stop, dim=1)                              # (N,)
            gold = (scores.gather(2, labels[..., None]).squeeze(2).sum(1) + start[labels[:, 0]]
                    + stop[labels[:, -1]] + trans[labels[:, :-1], labels[:, 1:]].sum(1))
            return (log_z - gold).mean()

    return BiGRUCRF()


def torch_senta(kind, vocab_size, emb_dim, hidden, hidden2):
    """The twin of SentaBiLSTM (``kind`` "bilstm"), SentaLSTM ("lstm"), SentaGRU ("gru") or SentaCNN ("cnn"):
    ids (N, L) -> logits (N, 2).

    Embedding (id 0 is padding), a bidirectional LSTM of ``hidden`` per
    direction, a forward LSTM or GRU of ``hidden``, or a window-3 convolution of ``hidden`` filters with tanh, max
    over time, tanh, fc ``hidden2`` with tanh, fc 2.
    """
    torch = require_torch()
    nn = torch.nn

    class Senta(nn.Module):
        def __init__(self):
            super().__init__()
            self.embedding = nn.Embedding(vocab_size, emb_dim, padding_idx=0)
            if kind in ("bilstm", "lstm", "gru"):
                rnn = nn.GRU if kind == "gru" else nn.LSTM
                self.encoder = rnn(emb_dim, hidden, batch_first=True, bidirectional=kind == "bilstm")
                features = (2 if kind == "bilstm" else 1) * hidden
            else:
                self.encoder = nn.Conv1d(emb_dim, hidden, 3, padding=1)
                features = hidden
            self.fc = nn.Linear(features, hidden2)
            self.out = nn.Linear(hidden2, 2)

        def forward(self, ids):
            emb = self.embedding(ids)                                                 # (N, L, E)
            if kind in ("bilstm", "lstm", "gru"):
                h = self.encoder(emb)[0]                                              # (N, L, 2H or H)
            else:
                h = torch.tanh(self.encoder(emb.transpose(1, 2))).transpose(1, 2)     # (N, L, H)
            return self.out(torch.tanh(self.fc(torch.tanh(h.max(dim=1).values))))

    return Senta()


def torch_simnet_bow(vocab_size, emb_dim=128, hidden=128):
    """The twin of SimNetBOW with the pointwise head: ``forward(a_ids, a_lengths, b_ids, b_lengths)`` -> logits (N, 2).

    Both texts through one embedding (id 0 is padding), the sum of the valid
    embeddings, softsign, then ``[|u - v|, u * v]`` -> Linear -> ReLU -> Linear(2).
    """
    torch = require_torch()
    nn = torch.nn

    class SimNetBOW(nn.Module):
        def __init__(self):
            super().__init__()
            self.embedding = nn.Embedding(vocab_size, emb_dim, padding_idx=0)
            self.fc, self.out = nn.Linear(2 * emb_dim, hidden), nn.Linear(hidden, 2)

        def encode(self, ids, lengths):
            valid = torch.arange(ids.shape[1])[None, :] < lengths[:, None]             # (N, L)
            pooled = (self.embedding(ids) * valid[..., None]).sum(1)                  # (N, E)
            return pooled / (pooled.abs() + 1)

        def forward(self, a_ids, a_lengths, b_ids, b_lengths):
            u, v = self.encode(a_ids, a_lengths), self.encode(b_ids, b_lengths)
            return self.out(torch.relu(self.fc(torch.cat([(u - v).abs(), u * v], 1))))

    return SimNetBOW()


def torch_attention_cluster(feature_dims=(1024, 128), num_clusters=(32, 32), hidden_sizes=(1024, 4096),
                            num_classes=3862, dropout=0.5):
    """The twin of :class:`video.models.AttentionCluster`: [(N, T, D_m) per modality] -> logits (N, num_classes).

    Per modality, shifting-attention units (softmax over frames, scale and
    shift, L2 normalise, divide by sqrt(clusters)); then concat, dropout,
    fc-tanh layers of ``hidden_sizes`` and the classifier. Every frame is valid.
    """
    torch = require_torch()
    nn = torch.nn

    class ShiftingAttention(nn.Module):
        def __init__(self, dim, k):
            super().__init__()
            self.k, self.proj = k, nn.Linear(dim, k)
            self.scale, self.shift = nn.Parameter(torch.randn(k)), nn.Parameter(torch.randn(k))

        def forward(self, x):
            w = torch.softmax(self.proj(x), dim=1)                                   # (N, T, K)
            pooled = w.transpose(1, 2) @ x * self.scale[:, None] + self.shift[:, None]   # (N, K, D)
            return (nn.functional.normalize(pooled, dim=-1) / self.k ** 0.5).flatten(1)  # (N, K*D)

    class AttentionCluster(nn.Module):
        def __init__(self):
            super().__init__()
            self.att = nn.ModuleList([ShiftingAttention(d, k) for d, k in zip(feature_dims, num_clusters)])
            layers, width = [nn.Dropout(dropout)], sum(d * k for d, k in zip(feature_dims, num_clusters))
            for size in hidden_sizes:
                layers += [nn.Linear(width, size), nn.Tanh()]
                width = size
            self.head = nn.Sequential(*layers, nn.Linear(width, num_classes))

        def forward(self, xs):
            return self.head(torch.cat([a(x) for a, x in zip(self.att, xs)], 1))

    return AttentionCluster()


def torch_attention_lstm(feature_dims=(1024, 128), embedding_size=512, lstm_size=1024, hidden_sizes=(8192, 4096),
                         num_classes=3862, dropout=0.5):
    """The twin of :class:`video.models.AttentionLSTM`: [(N, T, D_m) per modality] -> logits (N, num_classes).

    Per modality, fc-tanh embedding, bidirectional LSTM, dropout and attention
    pooling over frames; then concat, fc layers of ``hidden_sizes`` (the first
    with ReLU, the others with tanh) and the classifier. Every frame is valid.
    """
    torch = require_torch()
    nn = torch.nn

    class LSTMPool(nn.Module):
        def __init__(self, dim):
            super().__init__()
            self.fc = nn.Linear(dim, embedding_size)
            self.lstm = nn.LSTM(embedding_size, lstm_size, batch_first=True, bidirectional=True)
            self.drop, self.att = nn.Dropout(dropout), nn.Linear(2 * lstm_size, 1)

        def forward(self, x):
            h = self.drop(self.lstm(torch.tanh(self.fc(x)))[0])                      # (N, T, 2H)
            return (h * torch.softmax(self.att(h), dim=1)).sum(1)                    # (N, 2H)

    class AttentionLSTM(nn.Module):
        def __init__(self):
            super().__init__()
            self.pools = nn.ModuleList([LSTMPool(d) for d in feature_dims])
            layers, width = [], 2 * lstm_size * len(feature_dims)
            for i, size in enumerate(hidden_sizes):
                layers += [nn.Linear(width, size), nn.ReLU() if i == 0 else nn.Tanh()]
                width = size
            self.head = nn.Sequential(*layers, nn.Linear(width, num_classes))

        def forward(self, xs):
            return self.head(torch.cat([p(x) for p, x in zip(self.pools, xs)], 1))

    return AttentionLSTM()


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
    torch = require_torch()
    nn = torch.nn

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


def torch_ssd_mobilenet_v1(num_classes, scale, source_blocks, extra_channels, anchors, priors, variances=(0.1, 0.2)):
    """PyTorch SSD on MobileNet V1, :class:`vision.models.SSDMobileNetV1`'s twin: images (N, 3, S, S) ->
    (N, P, 4 + C + 1), offsets and logits in training, decoded corner boxes and probabilities in eval mode.

    Module and parameter names equal oar's (``features.{i}``, ``extras.{k}``, ``loc_heads.{k}``,
    ``conf_heads.{k}``), so state dicts move between them unchanged. ``anchors``: priors per cell of each
    map; ``priors`` (P, 4) centre-size, as the oar model's buffer.
    """
    torch = require_torch()
    nn = torch.nn
    blocks = ((64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2), (512, 1), (512, 1), (512, 1), (512, 1),
              (512, 1), (1024, 2), (1024, 1))

    def conv_bn(cin, cout, kernel, stride=1, groups=1):
        return nn.Sequential(nn.Conv2d(cin, cout, kernel, stride, (kernel - 1) // 2, groups=groups, bias=False),
                             nn.BatchNorm2d(cout, momentum=0.1), nn.ReLU(inplace=True))

    class SSD(nn.Module):
        def __init__(self):
            super().__init__()
            width = int(32 * scale)
            layers, channels = [conv_bn(3, width, 3, 2)], []
            for i, (out, stride) in enumerate(blocks, start=1):
                out = int(out * scale)
                layers.append(nn.Sequential(conv_bn(width, width, 3, stride, width), conv_bn(width, out, 1)))
                width = out
                if i in source_blocks:
                    channels.append(out)
            self.features = nn.Sequential(*layers)
            extras = []
            for out in extra_channels:
                out = max(int(out * scale), 8)
                extras.append(nn.Sequential(conv_bn(width, out // 2, 1), conv_bn(out // 2, out, 3, 2)))
                channels.append(out)
                width = out
            self.extras = nn.ModuleList(extras)
            self.loc_heads = nn.ModuleList([nn.Conv2d(c, a * 4, 3, padding=1) for c, a in zip(channels, anchors)])
            self.conf_heads = nn.ModuleList([nn.Conv2d(c, a * (num_classes + 1), 3, padding=1)
                                             for c, a in zip(channels, anchors)])
            self.register_buffer("priors", torch.as_tensor(priors), persistent=False)

        def forward(self, x):
            maps = []
            for i, layer in enumerate(self.features):
                x = layer(x)
                if i in source_blocks:
                    maps.append(x)
            for layer in self.extras:
                x = layer(x)
                maps.append(x)
            n = x.shape[0]
            loc = torch.cat([h(m).permute(0, 2, 3, 1).reshape(n, -1, 4) for m, h in zip(maps, self.loc_heads)], 1)
            conf = torch.cat([h(m).permute(0, 2, 3, 1).reshape(n, -1, num_classes + 1)
                              for m, h in zip(maps, self.conf_heads)], 1)
            if self.training:
                return torch.cat([loc, conf], -1)
            p = self.priors
            centre = p[:, :2] + loc[..., :2] * variances[0] * p[:, 2:]
            half = p[:, 2:] * torch.exp(loc[..., 2:] * variances[1]) / 2
            return torch.cat([centre - half, centre + half, torch.softmax(conf, -1)], -1)

    return SSD()


def blas_info():
    """What threadpoolctl says of the BLAS NumPy uses: library, CPU kernel, threads."""
    try:
        import threadpoolctl
    except ImportError:
        return None
    return [{key: info.get(key) for key in ("internal_api", "architecture", "num_threads", "version")}
            for info in threadpoolctl.threadpool_info() if info.get("user_api") == "blas"]
