"""Layers built from minigrad ops, in PyTorch's shape: Module, Linear, Sequential.

A Module owns Tensors with ``requires_grad=True`` (its parameters) and other
Modules. ``parameters()`` finds them all by walking the attributes in the order
they were set, so the order is stable from run to run.

Weights are stored as (in_features, out_features), so a layer computes
``x @ W + b`` exactly as the course writes it (PyTorch stores the transpose).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import NamedTuple

import numpy as np

from . import capture as _capture
from . import random as _random
from .tensor import Tensor

__all__ = ["Module", "IncompatibleKeys", "Linear", "Sequential", "MLP", "ReLU", "Tanh", "Sigmoid", "Dropout",
           "Identity", "init_weights", "xavier_normal", "xavier_uniform", "he_normal",
           "he_uniform", "normal", "calculate_gain"]


# ------------------------------------------------------------------ init
# Each returns an array of shape (fan_in, fan_out) for ``x @ W``. ``rng`` is a
# numpy Generator, an int seed, or None for minigrad.random's default generator.

def _gen(rng) -> np.random.Generator:
    return _random.as_generator(rng, "init")


def _check_size(where: str, what: str, n) -> int:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"{where}: {what} must be a positive integer, got {n!r}")
    return int(n)


def normal(fan_in: int, fan_out: int, std: float = 0.01, rng=None) -> np.ndarray:
    """N(0, std^2): the classic 'small random numbers' (too small for deep nets).

    It takes no gain: its standard deviation is given directly.
    """
    return _gen(rng).normal(0.0, std, size=(fan_in, fan_out))


# The gain of a nonlinearity f, as torch.nn.init.calculate_gain gives it. An init
# scheme sets Var(W) = gain**2 / fan, so that a layer followed by f keeps the size
# of its activations from layer to layer: for ReLU, which zeroes half of its
# inputs, E[relu(z)**2] = Var(z) / 2, so gain**2 = 2 makes up for the half lost.
_GAINS: dict[str, float] = {
    "linear": 1.0, "identity": 1.0, "sigmoid": 1.0,
    "tanh": 5.0 / 3.0, "relu": float(np.sqrt(2.0)), "selu": 0.75,
}


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    """The recommended gain for a nonlinearity, as ``torch.nn.init.calculate_gain``.

    ======================  ===========================
    linear, identity        1
    sigmoid                 1
    tanh                    5/3
    relu                    sqrt(2)
    leaky_relu              sqrt(2 / (1 + slope**2)), slope = ``param`` (default 0.01)
    selu                    3/4
    ======================  ===========================

    Pass it as ``gain=`` to :func:`xavier_normal`, :func:`he_normal` and the
    others, to :func:`init_weights`, ``Linear`` or ``MLP``: the weights'
    standard deviation is multiplied by it.
    """
    if not isinstance(nonlinearity, str):
        raise TypeError(f"calculate_gain: nonlinearity must be a name such as 'tanh', got "
                        f"{type(nonlinearity).__name__} {nonlinearity!r}")
    if nonlinearity == "leaky_relu":
        slope = 0.01 if param is None else param
        if isinstance(slope, bool) or not isinstance(slope, (int, float, np.integer, np.floating)):
            raise ValueError(f"calculate_gain: negative_slope {slope!r} is not a valid number")
        return float(np.sqrt(2.0 / (1.0 + float(slope) ** 2)))
    try:
        return _GAINS[nonlinearity]
    except KeyError:
        raise ValueError(f"calculate_gain: unsupported nonlinearity {nonlinearity!r}; choose one "
                         f"of {sorted(_GAINS) + ['leaky_relu']}") from None


def _check_gain(where: str, gain) -> float | None:
    """``gain`` as a float (a nonlinearity's name is looked up), or None for the default."""
    if gain is None:
        return None
    if isinstance(gain, str):
        return calculate_gain(gain)
    if isinstance(gain, (bool, np.bool_)) or not isinstance(gain, (int, float, np.integer, np.floating)):
        raise TypeError(f"{where}: gain must be a number or a nonlinearity's name, "
                        f"got {type(gain).__name__} {gain!r}")
    if not (np.isfinite(gain) and gain > 0):
        raise ValueError(f"{where}: gain must be a positive finite number, got {gain!r}")
    return float(gain)


def xavier_normal(fan_in: int, fan_out: int, rng=None, *, gain: float | None = None) -> np.ndarray:
    """Glorot & Bengio (2010): N(0, std^2), std = gain * sqrt(2 / (fan_in + fan_out)).

    The default gain is 1 (the paper's scheme, for tanh/sigmoid nets); PyTorch's
    ``xavier_normal_(w, gain)`` is the same.
    """
    std = np.sqrt(2.0 / (fan_in + fan_out))
    gain = _check_gain("xavier_normal", gain)
    return _gen(rng).normal(0.0, std if gain is None else gain * std, size=(fan_in, fan_out))


def xavier_uniform(fan_in: int, fan_out: int, rng=None, *, gain: float | None = None) -> np.ndarray:
    """U(-a, a), a = gain * sqrt(6 / (fan_in + fan_out)): the variance of xavier_normal.

    The default gain is 1, as in PyTorch's ``xavier_uniform_``.
    """
    a = np.sqrt(6.0 / (fan_in + fan_out))
    gain = _check_gain("xavier_uniform", gain)
    a = a if gain is None else gain * a
    return _gen(rng).uniform(-a, a, size=(fan_in, fan_out))


def he_normal(fan_in: int, fan_out: int, rng=None, *, gain: float | None = None) -> np.ndarray:
    """He et al. (2015): N(0, std^2), std = gain / sqrt(fan_in), gain = sqrt(2) by default.

    Var = 2 / fan_in keeps ReLU activations' scale. Another gain gives PyTorch's
    ``kaiming_normal_`` for that nonlinearity (std = gain / sqrt(fan_in)).
    """
    gain = _check_gain("he_normal", gain)
    std = np.sqrt(2.0 / fan_in) if gain is None else gain / np.sqrt(fan_in)
    return _gen(rng).normal(0.0, std, size=(fan_in, fan_out))


def he_uniform(fan_in: int, fan_out: int, rng=None, *, gain: float | None = None) -> np.ndarray:
    """U(-a, a), a = gain * sqrt(3 / fan_in), gain = sqrt(2) by default: he_normal's variance.

    With the default, a = sqrt(6 / fan_in); PyTorch's ``kaiming_uniform_`` uses
    the same bound for a given gain.
    """
    gain = _check_gain("he_uniform", gain)
    a = np.sqrt(6.0 / fan_in) if gain is None else gain * np.sqrt(3.0 / fan_in)
    return _gen(rng).uniform(-a, a, size=(fan_in, fan_out))


INITS: dict[str, Callable[..., np.ndarray]] = {
    "normal": normal, "xavier": xavier_normal, "xavier_normal": xavier_normal,
    "xavier_uniform": xavier_uniform, "he": he_normal, "he_normal": he_normal,
    "he_uniform": he_uniform,
}


def init_weights(init: str | Callable[..., np.ndarray], fan_in: int, fan_out: int,
                 rng=None, gain: float | str | None = None) -> np.ndarray:
    """An initial weight matrix from a name in ``INITS`` or a callable(fan_in, fan_out, rng).

    ``gain`` (a number, or a nonlinearity's name for :func:`calculate_gain`)
    scales the scheme's standard deviation; None keeps the scheme's own (1 for
    Xavier, sqrt(2) for He). A callable receives it as ``gain=`` only when it is
    given. ``"normal"`` takes no gain: its standard deviation is set directly.
    """
    fan_in = _check_size("init_weights", "fan_in", fan_in)
    fan_out = _check_size("init_weights", "fan_out", fan_out)
    gain = _check_gain("init_weights", gain)
    extra = {} if gain is None else {"gain": gain}
    if callable(init):
        w = np.asarray(init(fan_in, fan_out, rng=rng, **extra))
        if w.shape != (fan_in, fan_out):
            raise ValueError(f"init_weights: the init callable returned shape {w.shape}, "
                             f"expected (fan_in, fan_out) = {(fan_in, fan_out)}")
        return w
    try:
        scheme = INITS[init]
    except KeyError:
        raise ValueError(f"init: unknown scheme {init!r}; choose one of {sorted(INITS)} "
                         f"or pass a callable") from None
    if scheme is normal and extra:
        raise ValueError(f"init_weights: the 'normal' scheme takes no gain (its std is given "
                         f"directly), got gain={gain}")
    return scheme(fan_in, fan_out, rng=rng, **extra)


# ---------------------------------------------------------------- Module

class IncompatibleKeys(NamedTuple):
    """What ``load_state_dict(..., strict=False)`` did not load, as PyTorch's named tuple."""

    missing_keys: list[str]
    unexpected_keys: list[str]


class Module:
    """Base class: subclasses set Tensors and Modules as attributes and define forward."""

    training = True

    def forward(self, *args):
        raise NotImplementedError

    def __call__(self, *args):
        return self.forward(*args)

    def __init_subclass__(cls, **kwargs):
        # module(x) runs forward(x): a class that defines forward is called straight
        # through it (one Python call per layer, not two), unless it defines __call__.
        super().__init_subclass__(**kwargs)
        if "forward" in vars(cls) and "__call__" not in vars(cls):
            cls.__call__ = cls.forward

    def named_parameters(self, prefix: str = "") -> Iterator[tuple[str, Tensor]]:
        seen: set[int] = set()
        for name, value in vars(self).items():
            items = value if isinstance(value, (list, tuple)) else [value]
            for i, v in enumerate(items):
                full = f"{prefix}{name}" + (f".{i}" if isinstance(value, (list, tuple)) else "")
                if isinstance(v, Tensor) and v.requires_grad and id(v) not in seen:
                    seen.add(id(v))
                    yield full, v
                elif isinstance(v, Module):
                    for n, p in v.named_parameters(full + "."):
                        if id(p) not in seen:
                            seen.add(id(p))
                            yield n, p

    def parameters(self) -> list[Tensor]:
        """Every Tensor with requires_grad=True reachable from this module, once each."""
        return [p for _, p in self.named_parameters()]

    def modules(self) -> Iterator[Module]:
        yield self
        for value in vars(self).values():
            for v in value if isinstance(value, (list, tuple)) else [value]:
                if isinstance(v, Module):
                    yield from v.modules()

    def zero_grad(self) -> None:
        for p in self.parameters():
            p.grad = None

    def train(self, mode: bool = True) -> Module:
        for m in self.modules():
            m.training = mode
        return self

    def eval(self) -> Module:
        return self.train(False)

    def num_parameters(self) -> int:
        return sum(p.size for p in self.parameters())

    # ------------------------------------------------------------ keeping it
    # Integer attributes that belong to the module's state, beside its Tensors
    # (BatchNorm1d's count of training batches).
    _counters: tuple[str, ...] = ()

    def _state_entries(self, prefix: str = "", seen: set[int] | None = None
                       ) -> Iterator[tuple[str, Module, str | None, Tensor | None]]:
        """(dotted name, owning module, counter name, tensor): every entry of the state."""
        seen = set() if seen is None else seen
        for name, value in vars(self).items():
            items = value if isinstance(value, (list, tuple)) else [value]
            for i, v in enumerate(items):
                full = f"{prefix}{name}" + (f".{i}" if isinstance(value, (list, tuple)) else "")
                if isinstance(v, Tensor) and id(v) not in seen:
                    seen.add(id(v))
                    yield full, self, None, v
                elif isinstance(v, Module):
                    yield from v._state_entries(full + ".", seen)
        for name in self._counters:
            yield f"{prefix}{name}", self, name, None

    def state_dict(self) -> dict[str, np.ndarray]:
        """Every parameter and buffer by dotted name, as PyTorch's ``Module.state_dict()``.

        Names follow the attributes: ``layers.0.weight`` for the first layer of
        a ``Sequential``/``MLP`` (whose layers live in ``.layers``), ``weight``,
        ``bias``. Buffers are the Tensors that need no gradient, such as
        BatchNorm1d's ``running_mean`` and ``running_var``, and its
        ``num_batches_tracked`` (as a 0-d int64 array). As in PyTorch the arrays
        are the module's own, not copies: take ``copy.deepcopy(sd)`` to keep a
        snapshot while training goes on, or write it with ``minigrad.save``.
        """
        sd: dict[str, np.ndarray] = {}
        for key, module, counter, t in self._state_entries():
            sd[key] = t.data if t is not None else np.array(getattr(module, counter), dtype=np.int64)
        return sd

    def load_state_dict(self, state_dict, strict: bool = True) -> IncompatibleKeys:
        """Copy the arrays of ``state_dict`` into this module's parameters and buffers.

        As PyTorch's: with ``strict`` (the default) the keys must be exactly
        those of ``self.state_dict()``; a missing or an unexpected key, or an
        entry whose shape differs from the module's, raises RuntimeError and
        nothing is changed (everything is checked first). With
        ``strict=False`` missing and unexpected keys are allowed and the others
        loaded; shapes must still match. The numbers are copied in place (a
        parameter keeps its identity, so an optimizer built on it stays valid;
        its version counter goes up). Returns ``(missing_keys,
        unexpected_keys)``, a named tuple as PyTorch's.
        """
        cls = type(self).__name__
        if not isinstance(state_dict, Mapping):
            raise TypeError(f"{cls}.load_state_dict: expected a dict of arrays, got "
                            f"{type(state_dict).__name__}")
        entries = {key: (module, counter, t) for key, module, counter, t in self._state_entries()}
        missing = [k for k in entries if k not in state_dict]
        unexpected = [k for k in state_dict if k not in entries]
        errors = []
        if strict and unexpected:
            errors.append(f"Unexpected key(s) in state_dict: {', '.join(map(repr, unexpected))}.")
        if strict and missing:
            errors.append(f"Missing key(s) in state_dict: {', '.join(map(repr, missing))}.")
        todo = []
        for key, value in state_dict.items():
            if key not in entries:
                continue
            module, counter, t = entries[key]
            value = value.data if isinstance(value, Tensor) else value
            arr = np.asarray(value) if isinstance(value, (np.ndarray, np.generic, int, float)) else None
            if arr is None or arr.dtype.kind not in "biuf":
                what = f"dtype {arr.dtype}" if arr is not None else type(value).__name__
                errors.append(f"{key!r}: expected a real numeric array, got {what}.")
            elif counter is not None:
                if arr.shape != () or arr.dtype.kind not in "iu" or int(arr) < 0:
                    errors.append(f"{key!r}: expected a non-negative integer, got {value!r}.")
                else:
                    todo.append((module, counter, int(arr)))
            elif arr.shape != t.shape:
                errors.append(f"size mismatch for {key}: copying a param with shape {arr.shape} "
                              f"from checkpoint, the shape in current model is {t.shape}.")
            elif not np.can_cast(arr.dtype, t.dtype, "same_kind"):
                errors.append(f"{key!r}: cannot copy {arr.dtype} into the module's {t.dtype}.")
            elif not t.data.flags.writeable:
                errors.append(f"{key!r}: the module's array (shape {t.shape}) is read-only.")
            else:
                todo.append((t, None, arr))
        if errors:
            raise RuntimeError(f"Error(s) in loading state_dict for {cls}:\n\t" + "\n\t".join(errors)
                               + "\nNothing was changed.")
        for target, counter, value in todo:
            if counter is not None:
                setattr(target, counter, value)
            else:
                np.copyto(target.data, value, casting="same_kind")
                target._vc[0] += 1  # an in-place change: values saved from it are now stale
        return IncompatibleKeys(missing, unexpected)


class Linear(Module):
    """y = x @ W + b, with W: (in_features, out_features) and b: (out_features,).

    W is drawn by ``init`` (see :func:`init_weights`), its standard deviation
    scaled by ``gain`` if given (e.g. ``gain=calculate_gain("tanh")``); b starts at 0.
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = True,
                 init: str | Callable = "he", rng=None, dtype=None, gain: float | str | None = None):
        in_features = _check_size("Linear", "in_features", in_features)
        out_features = _check_size("Linear", "out_features", out_features)
        self.in_features, self.out_features = in_features, out_features
        self.weight = Tensor(init_weights(init, in_features, out_features, rng, gain=gain),
                             requires_grad=True, dtype=dtype)
        self.bias = Tensor(np.zeros(out_features), requires_grad=True, dtype=dtype) if bias else None

    def forward(self, x: Tensor) -> Tensor:
        shape = x.shape if isinstance(x, Tensor) else np.shape(x)
        if not shape or shape[-1] != self.in_features:
            raise ValueError(f"{self!r}: expected an input whose last dimension is "
                             f"{self.in_features}, got shape {tuple(shape)}")
        y = x @ self.weight
        return y + self.bias if self.bias is not None else y

    def __repr__(self) -> str:
        return f"Linear({self.in_features}, {self.out_features}, bias={self.bias is not None})"


class _Activation(Module):
    method = ""

    def forward(self, x: Tensor) -> Tensor:
        return getattr(x, self.method)()

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class ReLU(_Activation):
    method = "relu"


class Tanh(_Activation):
    method = "tanh"


class Sigmoid(_Activation):
    method = "sigmoid"


class Identity(Module):
    def forward(self, x: Tensor) -> Tensor:
        return x


ACTIVATIONS = {"relu": ReLU, "tanh": Tanh, "sigmoid": Sigmoid, "identity": Identity}


class Dropout(Module):
    """Zero each element with probability p in training, scale the rest by 1/(1-p).

    The mask comes from ``generator`` (the package's default generator unless
    given), so ``minigrad.checkpoint`` can replay it exactly.
    """

    def __init__(self, p: float = 0.5, generator: np.random.Generator | None = None):
        if isinstance(p, (bool, np.bool_)) or not isinstance(p, (int, float, np.integer, np.floating)):
            raise TypeError(f"Dropout: p must be a number, got {type(p).__name__} {p!r}")
        if not 0.0 <= p < 1.0:  # also refuses NaN
            raise ValueError(f"Dropout: p must be in [0, 1), got {p}")
        if generator is not None and not isinstance(generator, np.random.Generator):
            raise TypeError(f"Dropout: generator must be a numpy.random.Generator or None, "
                            f"got {type(generator).__name__}")
        self.p = p
        self.generator = generator

    def forward(self, x: Tensor) -> Tensor:
        if not self.training or self.p == 0.0:
            return x
        mask = Tensor._make(self._draw(x.shape, x.dtype))
        if _capture.observers:  # a recording compile draws a fresh mask on every call
            p, training, shape, dtype = self.p, self.training, x.shape, x.dtype
            _capture.notify("random", mask, lambda: self._draw(shape, dtype),
                            lambda: self.p == p and self.training == training)
        return x * mask

    def _draw(self, shape: tuple, dtype) -> np.ndarray:
        """A mask of 0 and 1/(1-p), each entry kept with probability 1 - p, in ``dtype``."""
        gen = self.generator or _random.default_generator()
        mask = (gen.random(shape) >= self.p) / (1.0 - self.p)
        return mask if mask.dtype == dtype else mask.astype(dtype)

    def __repr__(self) -> str:
        return f"Dropout(p={self.p})"


class Sequential(Module):
    """Apply layers in order."""

    def __init__(self, *layers: Module):
        self.layers = list(layers)

    def forward(self, x: Tensor) -> Tensor:
        for layer in self.layers:
            x = layer(x)
        return x

    def __getitem__(self, i):
        return Sequential(*self.layers[i]) if isinstance(i, slice) else self.layers[i]

    def __len__(self) -> int:
        return len(self.layers)

    def __iter__(self):
        return iter(self.layers)

    def __repr__(self) -> str:
        inner = "\n".join(f"  ({i}) {layer!r}" for i, layer in enumerate(self.layers))
        return f"Sequential(\n{inner}\n)"


def MLP(sizes: Sequence[int], activation: str = "relu", init: str | Callable = "he",
        bias: bool = True, rng=None, dtype=None, dropout: float = 0.0,
        gain: float | str | None = None) -> Sequential:
    """Linear layers of the given sizes with an activation between them (none after the last).

    ``MLP([784, 128, 10])`` is Linear(784, 128), ReLU, Linear(128, 10). ``init``
    and ``gain`` go to every Linear (the last one too); ``gain`` may name the
    nonlinearity, e.g. ``MLP(sizes, "tanh", init="xavier", gain="tanh")`` for
    std = 5/3 * sqrt(2 / (fan_in + fan_out)). None keeps the scheme's own gain.
    """
    if len(sizes) < 2:
        raise ValueError(f"MLP: need at least an input and an output size, got {list(sizes)}")
    for i, n in enumerate(sizes):
        _check_size("MLP", f"sizes[{i}]", n)
    rng = _random.as_generator(rng, "MLP")  # one stream for all layers, even from an int seed
    try:
        act = ACTIVATIONS[activation]
    except KeyError:
        raise ValueError(f"MLP: unknown activation {activation!r}; choose one of "
                         f"{sorted(ACTIVATIONS)}") from None
    layers: list[Module] = []
    for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
        layers.append(Linear(a, b, bias=bias, init=init, rng=rng, dtype=dtype, gain=gain))
        if i < len(sizes) - 2:
            layers.append(act())
            if dropout:
                layers.append(Dropout(dropout))
    return Sequential(*layers)


# ------------------------------------------------- gradient-flow helpers
# Residual connections, layer and batch normalisation, and clipping (notebook 10).

from .function import no_grad as _no_grad  # noqa: E402
from .ops import batch_norm as _batch_norm  # noqa: E402
from .ops import layer_norm as _layer_norm  # noqa: E402

__all__ += ["Residual", "LayerNorm", "BatchNorm1d", "clip_grad_norm"]


class Residual(Module):
    """y = x + module(x) (He et al., 2016).

    The Jacobian is I + d module / dx, so backward hands dL/dy to x unchanged
    along the identity path, whatever the wrapped module does to its share.
    """

    def __init__(self, module: Module):
        self.module = module

    def forward(self, x: Tensor) -> Tensor:
        y = self.module(x)
        if y.shape != x.shape:
            raise ValueError(f"Residual: the wrapped module must keep the shape of its input to "
                             f"be added to it; it maps {x.shape} to {y.shape}")
        return x + y

    def __repr__(self) -> str:
        inner = repr(self.module).replace("\n", "\n  ")
        return f"Residual(\n  {inner}\n)"


class LayerNorm(Module):
    """y = gain * (x - mean) / sqrt(var + eps) + bias over the last axis (Ba et al., 2016).

    ``gain`` (called ``weight``, as in PyTorch) starts at ones and ``bias`` at
    zeros, both of shape (features,). The normalisation is one op,
    ``minigrad.ops.LayerNorm``, with its own VJP; it keeps what PyTorch's
    fused layer keeps (the input, and a mean and 1/sigma per row). The gain is
    applied afterwards by an ordinary multiply, which keeps the normalised
    x_hat as well: one more array of the input's size than PyTorch's
    ``nn.LayerNorm``, whose single node covers the gain and bias too.
    """

    def __init__(self, features: int, eps: float = 1e-5, dtype=None):
        if int(features) != features or features < 1:
            raise ValueError(f"LayerNorm: features must be a positive integer, got {features!r}")
        self.features, self.eps = int(features), eps
        self.weight = Tensor(np.ones(self.features), requires_grad=True, dtype=dtype)
        self.bias = Tensor(np.zeros(self.features), requires_grad=True, dtype=dtype)

    def forward(self, x: Tensor) -> Tensor:
        if x.ndim == 0 or x.shape[-1] != self.features:
            raise ValueError(f"LayerNorm({self.features}): the input's last axis must have "
                             f"{self.features} features, got shape {x.shape}")
        return _layer_norm(x, eps=self.eps) * self.weight + self.bias

    def __repr__(self) -> str:
        return f"LayerNorm({self.features}, eps={self.eps:g})"


class BatchNorm1d(Module):
    """Batch normalisation of (N, num_features) inputs (Ioffe & Szegedy, 2015), as PyTorch's.

    Training mode (``train()``, the default) normalises each feature with the
    batch's own statistics, mu = mean over the N examples and the biased
    var = mean((x - mu)**2), then applies a gain and a bias:

        y = weight * (x - mu) / sqrt(var + eps) + bias

    The normalisation is one op, ``minigrad.ops.BatchNorm``, with its own VJP;
    an example's output, and so its gradient, depends on the whole batch.
    Each training call also updates, outside the graph (under ``no_grad``),

        running_mean = (1 - momentum) * running_mean + momentum * mu
        running_var  = (1 - momentum) * running_var  + momentum * var * N / (N - 1)

    (the *unbiased* batch variance, as PyTorch); ``momentum=None`` gives the
    plain average of all batches so far, weight 1 / num_batches_tracked.

    Evaluation mode (``eval()``) uses the running statistics instead, so the
    output of an example no longer depends on the others: y = x * s + t with
    s = weight / sqrt(running_var + eps), t = bias - running_mean * s, an
    affine map computed with ordinary ops (it could be folded into the Linear
    layer before it).

    Parameters: ``weight`` (ones) and ``bias`` (zeros), of shape (num_features,),
    if ``affine``. Buffers (Tensors that need no gradient, so not parameters):
    ``running_mean`` (zeros) and ``running_var`` (ones); ``num_batches_tracked``
    counts the training calls. Recomputing the forward pass in training mode
    (``minigrad.checkpoint``) updates the running statistics a second time, as
    ``torch.utils.checkpoint`` does.

    Memory: the normalisation op keeps what PyTorch's batch norm keeps (the
    input, and a mean and 1/sigma per feature); the gain is an ordinary
    multiply that keeps x_hat too, one more (N, num_features) array than
    PyTorch's fused ``nn.BatchNorm1d``. Unlike PyTorch's, the module takes
    only 2-D input.
    """

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = True, dtype=None):
        num_features = _check_size("BatchNorm1d", "num_features", num_features)
        if isinstance(eps, bool) or not isinstance(eps, (int, float, np.integer, np.floating)) \
                or not (np.isfinite(eps) and eps > 0):
            raise ValueError(f"BatchNorm1d: eps must be a positive number, got {eps!r}")
        if momentum is not None and (
                isinstance(momentum, bool)
                or not isinstance(momentum, (int, float, np.integer, np.floating))
                or not 0.0 <= momentum <= 1.0):
            raise ValueError(f"BatchNorm1d: momentum must be a number in [0, 1] or None, "
                             f"got {momentum!r}")
        self.num_features, self.eps, self.momentum, self.affine = num_features, eps, momentum, affine
        d = num_features
        self.weight = Tensor(np.ones(d), requires_grad=True, dtype=dtype) if affine else None
        self.bias = Tensor(np.zeros(d), requires_grad=True, dtype=dtype) if affine else None
        self.running_mean = Tensor(np.zeros(d), dtype=dtype)
        self.running_var = Tensor(np.ones(d), dtype=dtype)
        self.num_batches_tracked = 0

    _counters = ("num_batches_tracked",)

    def forward(self, x: Tensor) -> Tensor:
        x = x if isinstance(x, Tensor) else Tensor(x, dtype=self.running_mean.dtype)
        if x.ndim != 2 or x.shape[1] != self.num_features:
            raise ValueError(f"{self!r}: expected an input of shape (N, {self.num_features}), "
                             f"got shape {x.shape}")
        if not self.training:
            scale = 1.0 / np.sqrt(self.running_var.data + self.eps)
            if self.affine:
                scale = self.weight * scale
                return x * scale + (self.bias - self.running_mean.data * scale)
            return x * scale - self.running_mean.data * scale
        y = _batch_norm(x, eps=self.eps)  # refuses N = 1 before any statistic changes
        self._update_running_stats(x.data)
        return y * self.weight + self.bias if self.affine else y

    def _update_running_stats(self, x: np.ndarray) -> None:
        self.num_batches_tracked += 1
        m = 1.0 / self.num_batches_tracked if self.momentum is None else self.momentum
        with _no_grad():
            self.running_mean.mul_(1.0 - m).add_(m * x.mean(axis=0))
            self.running_var.mul_(1.0 - m).add_(m * x.var(axis=0, ddof=1))

    def __repr__(self) -> str:
        return (f"BatchNorm1d({self.num_features}, eps={self.eps:g}, momentum={self.momentum}, "
                f"affine={self.affine})")


def clip_grad_norm(parameters: Tensor | Iterable[Tensor], max_norm: float,
                   error_if_nonfinite: bool = True) -> float:
    """Scale all gradients together so that their global L2 norm is at most ``max_norm``.

    total = sqrt(sum over parameters p of sum(p.grad ** 2)); if total > max_norm,
    every ``p.grad`` is multiplied in place by max_norm / total, so the direction
    of the full gradient is kept and its norm becomes exactly ``max_norm``.
    Parameters whose ``.grad`` is None are skipped. Returns ``total``, the norm
    *before* clipping, as ``torch.nn.utils.clip_grad_norm_`` does. (PyTorch
    divides by total + 1e-6, so its clipped norm falls a hair short of max_norm.)
    Where the squares overflow but the gradients are finite (entries near
    1e200), the norm is computed with the largest entry factored out, so it is
    finite and the gradients are clipped; PyTorch returns inf there and scales
    every gradient to zero.

    A NaN or infinite norm cannot be clipped into anything useful: by default it
    raises RuntimeError and leaves every gradient as it was. PyTorch's default
    (its ``error_if_nonfinite=False``) goes on and multiplies every gradient by
    max_norm / total, which turns them into zeros and NaN; minigrad's
    ``error_if_nonfinite=False`` returns the norm and leaves every gradient
    unchanged.
    """
    params = [parameters] if isinstance(parameters, Tensor) else list(parameters)
    if isinstance(max_norm, bool) or not isinstance(max_norm, (int, float, np.number)):
        raise TypeError(f"clip_grad_norm: max_norm must be a number, got {max_norm!r}")
    max_norm = float(max_norm)
    if not (np.isfinite(max_norm) and max_norm > 0):
        raise ValueError(f"clip_grad_norm: max_norm must be a positive finite number, got {max_norm}")
    grads, seen = [], set()
    for i, p in enumerate(params):
        if not isinstance(p, Tensor):
            raise TypeError(f"clip_grad_norm: parameter {i} is a {type(p).__name__}, not a Tensor")
        if p.grad is not None and id(p) not in seen:  # a tensor listed twice counts once
            seen.add(id(p))
            grads.append(p)
    with np.errstate(over="ignore"):
        total = float(np.sqrt(sum(float(np.sum(np.square(p.grad, dtype=np.float64))) for p in grads)))
    if np.isinf(total) and all(np.all(np.isfinite(p.grad)) for p in grads):
        # The squares overflowed, not the grads: factor out the largest entry.
        m = max(float(np.max(np.abs(p.grad))) for p in grads)
        total = m * float(np.sqrt(sum(float(np.sum(np.square(p.grad / m))) for p in grads)))
    if not np.isfinite(total):
        if error_if_nonfinite:
            bad = [i for i, p in enumerate(params) if p.grad is not None
                   and not np.all(np.isfinite(p.grad))]
            raise RuntimeError(f"clip_grad_norm: the total gradient norm is {total}; the grads of "
                               f"parameters {bad[:10]}{' ...' if len(bad) > 10 else ''} hold NaN "
                               f"or inf. Nothing was changed.")
        return total
    if total > max_norm:
        scale = max_norm / total
        for p in grads:
            if p.grad.flags.writeable:
                p.grad *= scale
            else:
                p.grad = p.grad * scale
    return total
