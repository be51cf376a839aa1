"""Video recognition models (registered in ``framework.registry.MODELS``).

Frame models: TSN, TSM, StNet, NonLocalNet (clips (B, T, 3, H, W) -> scores); TSN also on stacked flow or
RGB differences, and TwoStreamTSN fusing an RGB and a motion TSN.
Feature models: AttentionCluster, AttentionLSTM, NeXtVLAD (frame features -> scores).
"""
from .tsn import TSN
from .tsm import TSM, ResNetTSM
from .stnet import StNet
from .nonlocal_net import NonLocalNet
from .attention_cluster import AttentionCluster
from .attention_lstm import AttentionLSTM
from .nextvlad import NeXtVLAD
from .two_stream import TwoStreamTSN

__all__ = ["TSN", "TSM", "ResNetTSM", "StNet", "NonLocalNet", "AttentionCluster", "AttentionLSTM", "NeXtVLAD", "TwoStreamTSN"]
