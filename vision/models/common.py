"""Pieces shared by the vision models.

- :class:`ImageClassifier`: the base class (``forward_features`` / ``forward_head``,
  freezing parts of the network, BatchNorm kept in eval mode, loading
  PyTorch-format state dicts).
- :class:`TorchLinear`: a linear layer that stores its weight as PyTorch does,
  (out_features, in_features), so ``fc.weight`` of a torchvision state dict
  loads unchanged.
- :class:`ConvBNAct` and :func:`make_conv`: convolution (+ BatchNorm +
  activation) with torchvision's initialisation.
- :func:`register_variant`: registers a named variant (``resnet50``) of a model
  class with fixed arguments, keeping the class's signature so config keys are
  still checked.
"""
import inspect
import math

import framework.nn.functional as F
from framework import nn
from framework.nn import initializer as init
from framework.registry import MODELS

__all__ = ["ImageClassifier", "TorchLinear", "ReLU6", "ConvBNAct", "make_conv", "register_variant",
           "BATCH_NORMS", "TORCH_BN_COUNTER"]

BATCH_NORMS = (nn.BatchNorm1D, nn.BatchNorm2D, nn.BatchNorm3D)
TORCH_BN_COUNTER = "num_batches_tracked"  # PyTorch's BatchNorm step counter; oar has no such buffer


def set_batch_norms_mode(layer, training):
    """Put every BatchNorm layer inside ``layer`` (itself included) in training or eval mode."""
    for sub in layer.sublayers(include_self=True):
        if isinstance(sub, BATCH_NORMS):
            sub.train(training)


class ImageClassifier(nn.Layer):
    """Base class of the image classifiers: ``forward(x) = forward_head(forward_features(x))``.

    Subclasses define ``forward_features`` (images (N, C, H, W) -> feature map
    (N, num_features, h, w)) and set ``head_name``, the attribute that holds the
    classifier (None when ``num_classes`` is 0); ``forward_head`` pools and
    applies it.

    Freezing: the direct children named in ``frozen`` get ``trainable = False``
    and stay in eval mode (BatchNorm uses and keeps its running statistics)
    even while the model trains. With ``frozen_bn_stats=False`` the BatchNorm
    layers inside frozen children still normalise by batch statistics in
    training and update their running statistics (their scale and shift stay
    fixed): what PyTorch does when only ``requires_grad`` is switched off, and
    what lets a frozen network adapt to inputs whose statistics differ from
    its pretraining (e.g. StNet's stacked super-images). ``norm_eval`` keeps
    every BatchNorm layer in eval mode while training (as mmaction2's
    ``norm_eval``) and takes precedence; their scale and shift still train
    unless frozen.

    State dicts: names and shapes follow torchvision. PyTorch's BatchNorm
    ``num_batches_tracked`` counters are accepted and ignored on load; oar's
    own state dicts do not contain them.
    """

    head_name = "fc"

    def __init__(self, norm_eval=False, frozen_bn_stats=True):
        super().__init__()
        self.norm_eval = bool(norm_eval)
        self.frozen_bn_stats = bool(frozen_bn_stats)
        self.base_frozen = ()  # children frozen by construction (e.g. ResNet's frozen_stages)
        self.frozen = ()

    def forward(self, x):
        return self.forward_head(self.forward_features(x))

    def forward_features(self, x):
        """Images (N, C, H, W) -> feature map (N, num_features, h, w)."""
        raise NotImplementedError

    def forward_head(self, x):
        """Feature map (N, num_features, h, w) -> logits (N, num_classes): global average pool,
        then the head; without a head (``num_classes=0``) the pooled features (N, num_features)."""
        x = F.adaptive_avg_pool2d(x, 1).flatten(1)  # (N, num_features)
        head = getattr(self, self.head_name)
        return x if head is None else head(x)

    def check_input(self, x, in_channels):
        """Raise ValueError naming the model and the shape unless x is (N, in_channels, H, W)."""
        if x.ndim != 4 or x.shape[1] != in_channels:
            raise ValueError(f"{type(self).__name__}: expected images of shape (N, {in_channels}, H, W), "
                             f"got {x.shape}")

    # ---- freezing -----------------------------------------------------------
    def backbone_names(self):
        """Names of the direct children that are not the classifier head."""
        return [name for name, _ in self.named_children() if name != self.head_name]

    def freeze(self, names):
        """Freeze exactly the direct children ``names`` (others become trainable again); returns self."""
        children = dict(self.named_children())
        unknown = [n for n in names if n not in children]
        if unknown:
            raise ValueError(f"{type(self).__name__}.freeze: no child named {unknown}; children: {list(children)}")
        self.frozen = tuple(names)
        for name, child in children.items():
            for p in child.parameters():
                p.trainable = name not in self.frozen
        return self.train(self.training)

    def freeze_backbone(self, frozen=True):
        """Freeze everything but the head (``frozen=False``: back to the constructor's freezing)."""
        return self.freeze(self.backbone_names() if frozen else self.base_frozen)

    def train(self, mode=True):
        """Training mode, except frozen children (but their BatchNorm layers unless ``frozen_bn_stats``)
        and every BatchNorm when ``norm_eval`` stay in eval mode."""
        super().train(mode)
        if mode:
            for name in self.frozen:
                child = getattr(self, name).eval()
                if not self.frozen_bn_stats:
                    set_batch_norms_mode(child, training=True)
            if self.norm_eval:
                set_batch_norms_mode(self, training=False)
        return self

    # ---- state ----------------------------------------------------------------
    def set_state_dict(self, state_dict, strict=True):
        """``nn.Layer.set_state_dict`` after dropping PyTorch's ``*.num_batches_tracked`` entries."""
        kept = {k: v for k, v in state_dict.items() if k.rsplit(".", 1)[-1] != TORCH_BN_COUNTER}
        return super().set_state_dict(kept, strict)

    load_dict = set_state_dict
    set_dict = set_state_dict


class TorchLinear(nn.Layer):
    """y = x @ weight.T + bias, with ``weight`` stored (out_features, in_features) as in PyTorch.

    oar's ``nn.Linear`` stores (in, out) as Paddle does; the classifiers use
    this layer so that torchvision's ``fc.weight`` / ``classifier.1.weight``
    load without transposing. Initialisation is PyTorch's:
    U(-1/sqrt(in), 1/sqrt(in)) for weight and bias; with ``weight_std``,
    N(0, weight_std) weights and zero bias (torchvision's MobileNetV2 head).

    Shape: (N, in_features) -> (N, out_features).
    """

    def __init__(self, in_features, out_features, weight_std=None):
        super().__init__()
        self.in_features, self.out_features = int(in_features), int(out_features)
        bound = 1.0 / math.sqrt(self.in_features)
        weight_init = init.Uniform(-bound, bound) if weight_std is None else init.Normal(0.0, weight_std)
        bias_init = init.Uniform(-bound, bound) if weight_std is None else init.Constant(0.0)
        self.weight = self.create_parameter([self.out_features, self.in_features], default_initializer=weight_init)
        self.bias = self.create_parameter([self.out_features], default_initializer=bias_init, is_bias=True)

    def forward(self, x):
        return F.linear(x, self.weight.T, self.bias)

    def extra_repr(self):
        return f"in_features={self.in_features}, out_features={self.out_features}"


class ReLU6(nn.Layer):
    """min(max(x, 0), 6). Shape: any -> the same."""

    def forward(self, x):
        return x.clip(0.0, 6.0)


_ACTIVATIONS = {"relu": nn.ReLU, "relu6": ReLU6}


def make_conv(in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1):
    """A bias-free ``nn.Conv2D`` initialised as torchvision does: N(0, sqrt(2 / fan_out)),
    fan_out = out_channels / groups * kernel_size**2."""
    fan_out = out_channels // groups * kernel_size * kernel_size
    return nn.Conv2D(in_channels, out_channels, kernel_size, stride=stride, padding=padding, dilation=dilation,
                     groups=groups, bias_attr=False, weight_attr=init.KaimingNormal(fan_in=fan_out))


class ConvBNAct(nn.Sequential):
    """Conv2D (no bias, "same" padding for odd kernels) -> BatchNorm2D -> activation.

    torchvision's ``Conv2dNormActivation``: sublayers are named '0' (conv),
    '1' (BatchNorm) and '2' (activation, no parameters).

    Args:
        in_channels, out_channels, kernel_size, stride, groups: of the convolution.
        activation: "relu", "relu6" or None (no activation).

    Shape: (N, in_channels, H, W) -> (N, out_channels, ceil(H / stride), ceil(W / stride)).
    """

    def __init__(self, in_channels, out_channels, kernel_size=3, stride=1, groups=1, activation="relu"):
        if activation is not None and activation not in _ACTIVATIONS:
            raise ValueError(f"ConvBNAct: activation must be one of {sorted(_ACTIVATIONS)} or None, "
                             f"got {activation!r}")
        layers = [make_conv(in_channels, out_channels, kernel_size, stride, (kernel_size - 1) // 2, groups=groups),
                  nn.BatchNorm2D(out_channels)]
        if activation is not None:
            layers.append(_ACTIVATIONS[activation]())
        super().__init__(*layers)


def register_variant(name, cls, doc, **fixed):
    """Register ``name`` in MODELS as ``cls`` with the arguments ``fixed``; returns the builder.

    The builder's signature is the class's minus ``fixed``, so a config key the
    variant does not take is an error naming the key.
    """
    def build(**kwargs):
        return cls(**fixed, **kwargs)

    signature = inspect.signature(cls)
    build.__signature__ = signature.replace(
        parameters=[p for p in signature.parameters.values() if p.name not in fixed])
    build.__name__ = build.__qualname__ = name
    build.__doc__ = doc
    build.__module__ = cls.__module__
    return MODELS.register(build, name)
