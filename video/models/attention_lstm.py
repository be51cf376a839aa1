"""Attention LSTM: bidirectional LSTM over frame features with attention pooling.

PaddlePaddle's 2019 ``attention_lstm`` model for YouTube-8M (after Long et al.'s
YouTube-8M 2017 entry; attention pooling as in Bahdanau-style soft attention):
per modality, FC512-tanh embedding, a bidirectional LSTM (1024 per direction),
dropout, a one-unit fc scoring each frame, a softmax of the scores over the
video's own frames (``sequence_softmax``), and the weighted sum of the LSTM
outputs. The modalities are concatenated, then FC8192-relu, FC4096-tanh and
the classifier (3862 sigmoid outputs). The LSTM reads the frames in order, so
the model can tell a clip from its time reverse.

Shapes: features [(N, T, D_m) per modality], lengths (N,) or None
-> logits (N, num_classes) (the task applies the sigmoid).
"""
import framework
import framework.nn.functional as F
from framework import nn
from framework.registry import MODELS
from vision.models.common import register_variant

from .feature_utils import check_features, frame_mask, masked_softmax

__all__ = ["LSTMAttentionPooling", "AttentionLSTM", "attention_lstm_youtube8m"]


class LSTMAttentionPooling(nn.Layer):
    """One modality: fc-tanh embedding, BiLSTM, dropout, attention pooling over the valid frames.

    Shapes: x (N, T, D), lengths (N,) or None, mask (N, T) or None -> (N, 2 * lstm_size).
    """

    def __init__(self, feature_dim: int, embedding_size: int, lstm_size: int, dropout: float):
        super().__init__()
        self.embedding = nn.Linear(int(feature_dim), int(embedding_size))
        self.lstm = nn.LSTM(int(embedding_size), int(lstm_size), direction="bidirect")
        self.dropout = nn.Dropout(dropout) if dropout > 0 else None
        self.attention = nn.Linear(2 * int(lstm_size), 1)

    def forward(self, x, lengths=None, mask=None):
        hidden, _ = self.lstm(F.tanh(self.embedding(x)), lengths)          # (N, T, 2H), 0 beyond each length
        if self.dropout is not None:
            hidden = self.dropout(hidden)
        weights = masked_softmax(self.attention(hidden), mask, axis=1)      # (N, T, 1), sums to 1 over frames
        return (hidden * weights).sum(axis=1)                               # (N, 2H)


@MODELS.register()
class AttentionLSTM(nn.Layer):
    """Per-modality BiLSTM attention pooling, concat, fc layers (relu, then tanh), classifier logits.

    Args:
        feature_dims: feature size of each modality, e.g. [1024, 128].
        embedding_size: the fc-tanh embedding of each frame (512).
        lstm_size: hidden size of each LSTM direction (1024).
        hidden_sizes: the head's fc layers: the first with ReLU, the others with tanh ([8192, 4096]).
        num_classes: output classes.
        dropout: dropout on the LSTM outputs while training.

    Shapes: forward(features [(N, T, D_m)], lengths (N,) or None) -> (N, num_classes).
    """

    def __init__(self, feature_dims: list = (1024, 128), embedding_size: int = 512, lstm_size: int = 1024,
                 hidden_sizes: list = (8192, 4096), num_classes: int = 3862, dropout: float = 0.5):
        super().__init__()
        self.feature_dims = [int(d) for d in feature_dims]
        if not self.feature_dims or min(self.feature_dims) < 1 or not hidden_sizes:
            raise ValueError(f"AttentionLSTM: need positive feature_dims and at least one hidden size, got "
                             f"{self.feature_dims} and {list(hidden_sizes)}")
        self.poolings = nn.LayerList([LSTMAttentionPooling(d, embedding_size, lstm_size, dropout)
                                      for d in self.feature_dims])
        width, layers = 2 * int(lstm_size) * len(self.feature_dims), []
        for i, size in enumerate(hidden_sizes):
            layers += [nn.Linear(width, int(size)), nn.ReLU() if i == 0 else nn.Tanh()]
            width = int(size)
        self.hidden = nn.Sequential(*layers)
        self.classifier = nn.Linear(width, int(num_classes))

    def forward(self, features, lengths=None):
        check_features(features, self.feature_dims, "AttentionLSTM")
        mask = frame_mask(lengths, features[0].shape[1])
        out = framework.concat([pool(x, lengths, mask) for pool, x in zip(self.poolings, features)],
                               axis=1)                                      # (N, 2H * modalities)
        return self.classifier(self.hidden(out))


attention_lstm_youtube8m = register_variant(
    "attention_lstm_youtube8m", AttentionLSTM,
    "Attention LSTM as PaddlePaddle's 2019 YouTube-8M model: rgb 1024 + audio 128, embedding 512, "
    "BiLSTM 1024, FC8192-relu, FC4096-tanh; other arguments as :class:`AttentionLSTM`.",
    feature_dims=[1024, 128], embedding_size=512, lstm_size=1024, hidden_sizes=[8192, 4096])
