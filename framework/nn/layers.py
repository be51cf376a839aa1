"""Common layers with Paddle 2 names and arguments: Linear, Embedding, Dropout,
Conv1D/2D/3D, BatchNorm1D/2D/3D, LayerNorm, pooling, activations, Flatten, Identity.

Each layer holds its parameters and hyperparameters and calls one op of
``framework.nn.functional`` in ``forward``. ``weight_attr``/``bias_attr`` take
None (default initialisation), a :class:`~framework.nn.ParamAttr`, an
initializer, or False (no such parameter, e.g. ``bias_attr=False``).
Default initialisation follows Paddle: XavierUniform weights and zero biases
for Linear and Embedding; N(0, sqrt(2 / fan_in)) (Kaiming normal) for conv
weights; ones and zeros for the scale and shift of normalisation layers.
"""
import numpy

from .. import backend
from ..tensor import Tensor
from . import functional as F
from . import initializer as init
from .layer import Layer

__all__ = ["Linear", "Embedding", "Dropout", "Conv1D", "Conv2D", "Conv3D",
           "BatchNorm1D", "BatchNorm2D", "BatchNorm3D", "LayerNorm",
           "MaxPool2D", "MaxPool3D", "AvgPool2D", "AvgPool3D",
           "AdaptiveAvgPool1D", "AdaptiveAvgPool2D", "AdaptiveAvgPool3D",
           "ReLU", "LeakyReLU", "GELU", "Sigmoid", "Tanh", "Softmax", "Flatten", "Identity"]


def _check_ndim(layer, x, ndims, layout):
    """Raise ValueError naming ``layer`` and the shape unless ``x.ndim`` is one of ``ndims``."""
    if x.ndim not in ndims:
        raise ValueError(f"{type(layer).__name__}: expected input {layout}, got shape {x.shape}")


class Linear(Layer):
    """y = x @ weight + bias.

    Args:
        in_features, out_features: sizes of the last axis of input and output.
        weight_attr, bias_attr: see the module docstring; ``bias_attr=False`` drops the bias.

    Shape: input (*, in_features) -> output (*, out_features).

    Attributes:
        weight: (in_features, out_features), as in Paddle (PyTorch stores it
            transposed), XavierUniform by default.
        bias: (out_features,), zeros by default; None without a bias.
    """

    def __init__(self, in_features, out_features, weight_attr=None, bias_attr=None):
        super().__init__()
        self.in_features, self.out_features = int(in_features), int(out_features)
        self.weight = self.create_parameter([self.in_features, self.out_features], attr=weight_attr)
        self.bias = self.create_parameter([self.out_features], attr=bias_attr, is_bias=True)

    def forward(self, x):
        return F.linear(x, self.weight, self.bias)

    def extra_repr(self):
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class Embedding(Layer):
    """Looks up rows of a (num_embeddings, embedding_dim) table.

    Args:
        num_embeddings: size of the vocabulary.
        embedding_dim: size of each vector.
        padding_idx: an id whose row starts at zero and gets no gradient, so its
            output stays zero unless loaded weights say otherwise; negative
            counts from the end, as in Paddle.
        sparse: accepted for Paddle compatibility; gradients are always dense.
        weight_attr: see the module docstring (XavierUniform by default, as Paddle).

    Shape: ids (*) of an integer dtype -> (*, embedding_dim).
    """

    def __init__(self, num_embeddings, embedding_dim, padding_idx=None, sparse=False, weight_attr=None):
        super().__init__()
        self.num_embeddings, self.embedding_dim = int(num_embeddings), int(embedding_dim)
        if padding_idx is not None:
            if not -self.num_embeddings <= padding_idx < self.num_embeddings:
                raise ValueError(f"Embedding: padding_idx {padding_idx} is out of range for "
                                 f"{self.num_embeddings} embeddings")
            padding_idx = int(padding_idx) % self.num_embeddings
        self.padding_idx, self.sparse = padding_idx, bool(sparse)
        self.weight = self.create_parameter([self.num_embeddings, self.embedding_dim], attr=weight_attr)
        if padding_idx is not None:
            self.weight.data[padding_idx] = 0

    def forward(self, x):
        return F.embedding(x, self.weight, padding_idx=self.padding_idx)

    def extra_repr(self):
        return f"{self.num_embeddings}, {self.embedding_dim}, padding_idx={self.padding_idx}"


class Dropout(Layer):
    """Zeroes each element with probability ``p`` while training; identity in eval mode.

    ``mode="upscale_in_train"`` scales the kept elements by 1 / (1 - p) while
    training; ``"downscale_in_infer"`` instead scales by (1 - p) at inference.
    Shape: any -> the same.
    """

    def __init__(self, p=0.5, mode="upscale_in_train"):
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"Dropout: p must be in [0, 1], got {p}")
        self.p, self.mode = float(p), mode

    def forward(self, x):
        return F.dropout(x, p=self.p, training=self.training, mode=self.mode)

    def extra_repr(self):
        return f"p={self.p}, mode={self.mode}"


def _tuple(value, ndim, what, layer):
    values = (value,) * ndim if isinstance(value, (int, numpy.integer)) else tuple(value)
    if len(values) != ndim:
        raise ValueError(f"{layer}: {what} must be an int or {ndim} ints, got {value!r}")
    return tuple(int(v) for v in values)


class _ConvNd(Layer):
    """Shared by Conv1D/2D/3D, which only set ``ndim``.

    Args:
        in_channels, out_channels: channel counts; both must divide by ``groups``.
        kernel_size: an int or ``ndim`` ints.
        stride, padding, dilation: ints or ``ndim`` ints; padding may be "same" or "valid".
        groups: split the channels into this many independent convolutions.
        weight_attr, bias_attr: see the module docstring.

    Attributes:
        weight: (out_channels, in_channels / groups, *kernel_size), N(0, sqrt(2 / fan_in)).
        bias: (out_channels,), zeros; None with ``bias_attr=False``.
    """

    ndim = None

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 weight_attr=None, bias_attr=None):
        super().__init__()
        name = type(self).__name__
        if groups < 1 or in_channels % groups or out_channels % groups:
            raise ValueError(f"{name}: in_channels {in_channels} and out_channels {out_channels} "
                             f"must both divide by groups={groups}")
        self.in_channels, self.out_channels, self.groups = int(in_channels), int(out_channels), int(groups)
        self.kernel_size = _tuple(kernel_size, self.ndim, "kernel_size", name)
        self.stride, self.padding, self.dilation = stride, padding, dilation
        shape = [self.out_channels, self.in_channels // self.groups, *self.kernel_size]
        self.weight = self.create_parameter(shape, attr=weight_attr, default_initializer=init.KaimingNormal())
        self.bias = self.create_parameter([self.out_channels], attr=bias_attr, is_bias=True)

    def forward(self, x):
        conv = getattr(F, f"conv{self.ndim}d")
        return conv(x, self.weight, self.bias, stride=self.stride, padding=self.padding,
                    dilation=self.dilation, groups=self.groups)

    def extra_repr(self):
        return (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}, "
                f"padding={self.padding}, dilation={self.dilation}, groups={self.groups}, "
                f"bias={self.bias is not None}")


class Conv1D(_ConvNd):
    """1-d convolution layer. Shape: (N, C_in, L) -> (N, C_out, L_out). Arguments as ``_ConvNd``."""

    ndim = 1


class Conv2D(_ConvNd):
    """2-d convolution layer. Shape: (N, C_in, H, W) -> (N, C_out, H_out, W_out).

    Arguments as ``_ConvNd``; e.g. ``Conv2D(3, 64, 7, stride=2, padding=3)`` is
    ResNet's stem (9408 weights + 64 biases).
    """

    ndim = 2


class Conv3D(_ConvNd):
    """3-d convolution layer. Shape: (N, C_in, D, H, W) -> (N, C_out, D_out, H_out, W_out)."""

    ndim = 3


class BatchNormBase(Layer):
    """Shared by BatchNorm1D/2D/3D: normalise each channel (axis 1) over the other axes.

    Training uses the batch statistics and updates the running ones:
    ``running = momentum * running + (1 - momentum) * batch`` (Paddle's
    convention); eval mode uses the running statistics.

    Args:
        num_features: number of channels C.
        momentum: weight of the old running statistics.
        epsilon: added to the variance.
        weight_attr, bias_attr: scale (ones) and shift (zeros); False drops them.

    Attributes: weight, bias (C,) Parameters; running_mean (C,) zeros and
    running_var (C,) ones, persistable buffers.
    """

    ndims = ()
    layout = ""

    def __init__(self, num_features, momentum=0.9, epsilon=1e-5, weight_attr=None, bias_attr=None):
        super().__init__()
        self.num_features, self.momentum, self.epsilon = int(num_features), float(momentum), float(epsilon)
        shape = [self.num_features]
        self.weight = self.create_parameter(shape, attr=weight_attr, default_initializer=init.Constant(1.0))
        self.bias = self.create_parameter(shape, attr=bias_attr, is_bias=True)
        xp = backend.array_module()
        self.register_buffer("running_mean", Tensor(xp.zeros(shape, dtype=self._dtype)))
        self.register_buffer("running_var", Tensor(xp.ones(shape, dtype=self._dtype)))

    def forward(self, x):
        _check_ndim(self, x, self.ndims, self.layout)
        if x.shape[1] != self.num_features:
            raise ValueError(f"{type(self).__name__}: expected {self.num_features} channels on axis 1, "
                             f"got input of shape {x.shape}")
        return F.batch_norm(x, self.running_mean, self.running_var, self.weight, self.bias,
                            training=self.training, momentum=self.momentum, epsilon=self.epsilon)

    def extra_repr(self):
        return f"num_features={self.num_features}, momentum={self.momentum}, epsilon={self.epsilon}"


class BatchNorm1D(BatchNormBase):
    """Batch normalisation of (N, C) or (N, C, L) inputs; output has the same shape."""

    ndims, layout = (2, 3), "(N, C) or (N, C, L)"


class BatchNorm2D(BatchNormBase):
    """Batch normalisation of (N, C, H, W) inputs; output has the same shape."""

    ndims, layout = (4,), "(N, C, H, W)"


class BatchNorm3D(BatchNormBase):
    """Batch normalisation of (N, C, D, H, W) inputs; output has the same shape."""

    ndims, layout = (5,), "(N, C, D, H, W)"


class LayerNorm(Layer):
    """Normalise over the trailing ``normalized_shape`` axes of each example, then scale and shift.

    Args:
        normalized_shape: an int or the tuple of trailing sizes.
        epsilon: added to the variance.
        weight_attr, bias_attr: scale (ones) and shift (zeros) of ``normalized_shape``; False drops them.

    Shape: (*, *normalized_shape) -> the same.
    """

    def __init__(self, normalized_shape, epsilon=1e-5, weight_attr=None, bias_attr=None):
        super().__init__()
        shape = [normalized_shape] if isinstance(normalized_shape, (int, numpy.integer)) else list(normalized_shape)
        self.normalized_shape, self.epsilon = [int(n) for n in shape], float(epsilon)
        self.weight = self.create_parameter(self.normalized_shape, attr=weight_attr,
                                            default_initializer=init.Constant(1.0))
        self.bias = self.create_parameter(self.normalized_shape, attr=bias_attr, is_bias=True)

    def forward(self, x):
        return F.layer_norm(x, self.normalized_shape, self.weight, self.bias, epsilon=self.epsilon)

    def extra_repr(self):
        return f"normalized_shape={self.normalized_shape}, epsilon={self.epsilon}"


class _Pool(Layer):
    """Shared by the pooling layers: calls ``F.<function>(x, **options)``.

    Subclasses set ``function`` (the op's name) and ``ndims`` (accepted input ranks).
    """

    function = None
    ndims = ()

    def __init__(self, **options):
        super().__init__()
        self.options = options

    def forward(self, x):
        _check_ndim(self, x, self.ndims, f"with {' or '.join(map(str, self.ndims))} dims")
        return getattr(F, self.function)(x, **self.options)

    def extra_repr(self):
        return ", ".join(f"{k}={v}" for k, v in self.options.items())


class _MaxPoolNd(_Pool):
    """Max over windows of ``kernel_size`` (stride defaults to the kernel size)."""

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False):
        super().__init__(kernel_size=kernel_size, stride=stride, padding=padding, ceil_mode=ceil_mode)


class MaxPool2D(_MaxPoolNd):
    """2-d max pooling. Shape: (N, C, H, W) -> (N, C, H_out, W_out)."""

    function, ndims = "max_pool2d", (4,)


class MaxPool3D(_MaxPoolNd):
    """3-d max pooling. Shape: (N, C, D, H, W) -> (N, C, D_out, H_out, W_out)."""

    function, ndims = "max_pool3d", (5,)


class _AvgPoolNd(_Pool):
    """Mean over windows of ``kernel_size``; ``exclusive`` leaves padding out of the count."""

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False, exclusive=True):
        super().__init__(kernel_size=kernel_size, stride=stride, padding=padding, ceil_mode=ceil_mode,
                         exclusive=exclusive)


class AvgPool2D(_AvgPoolNd):
    """2-d average pooling. Shape: (N, C, H, W) -> (N, C, H_out, W_out)."""

    function, ndims = "avg_pool2d", (4,)


class AvgPool3D(_AvgPoolNd):
    """3-d average pooling. Shape: (N, C, D, H, W) -> (N, C, D_out, H_out, W_out)."""

    function, ndims = "avg_pool3d", (5,)


class _AdaptiveAvgPoolNd(_Pool):
    """Average pooling to a fixed ``output_size`` (an int or one size per spatial axis)."""

    def __init__(self, output_size):
        super().__init__(output_size=output_size)


class AdaptiveAvgPool1D(_AdaptiveAvgPoolNd):
    """Shape: (N, C, L) -> (N, C, output_size)."""

    function, ndims = "adaptive_avg_pool1d", (3,)


class AdaptiveAvgPool2D(_AdaptiveAvgPoolNd):
    """Shape: (N, C, H, W) -> (N, C, *output_size); ``AdaptiveAvgPool2D(1)`` is global average pooling."""

    function, ndims = "adaptive_avg_pool2d", (4,)


class AdaptiveAvgPool3D(_AdaptiveAvgPoolNd):
    """Shape: (N, C, D, H, W) -> (N, C, *output_size)."""

    function, ndims = "adaptive_avg_pool3d", (5,)


class _Activation(Layer):
    """Shared by the activation layers: calls ``F.<function>(x, **options)``; shape unchanged."""

    function = None

    def __init__(self, **options):
        super().__init__()
        self.options = options

    def forward(self, x):
        return getattr(F, self.function)(x, **self.options)

    def extra_repr(self):
        return ", ".join(f"{k}={v}" for k, v in self.options.items())


class ReLU(_Activation):
    """max(x, 0)."""

    function = "relu"


class LeakyReLU(_Activation):
    """x if x > 0 else negative_slope * x."""

    function = "leaky_relu"

    def __init__(self, negative_slope=0.01):
        super().__init__(negative_slope=negative_slope)


class GELU(_Activation):
    """x * Phi(x) (exact), or its tanh approximation with ``approximate=True``."""

    function = "gelu"

    def __init__(self, approximate=False):
        super().__init__(approximate=approximate)


class Sigmoid(_Activation):
    """1 / (1 + exp(-x))."""

    function = "sigmoid"


class Tanh(_Activation):
    """tanh(x)."""

    function = "tanh"


class Softmax(_Activation):
    """exp(x) / sum(exp(x)) along ``axis`` (default the last)."""

    function = "softmax"

    def __init__(self, axis=-1):
        super().__init__(axis=axis)


class Flatten(Layer):
    """Merge axes ``start_axis`` .. ``stop_axis`` into one. Shape: (N, C, H, W) -> (N, C*H*W) by default."""

    def __init__(self, start_axis=1, stop_axis=-1):
        super().__init__()
        self.start_axis, self.stop_axis = int(start_axis), int(stop_axis)

    def forward(self, x):
        return x.flatten(self.start_axis, self.stop_axis)

    def extra_repr(self):
        return f"start_axis={self.start_axis}, stop_axis={self.stop_axis}"


class Identity(Layer):
    """Returns its input unchanged (extra arguments are ignored)."""

    def forward(self, x, *args, **kwargs):
        return x
