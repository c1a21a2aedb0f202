"""Optimizers: SGD with momentum, and Adam. Their state is plain NumPy arrays.

``optimizer.state`` maps each parameter's index to its buffers, so that the
memory notebooks can count them (``state_nbytes()``): none for plain SGD, one
buffer per parameter for momentum, two for Adam.

``step()`` first checks every parameter that has a gradient (the gradient's
shape, that it is real, that the parameter can be written) and the state kept
for it (each buffer present, of the parameter's shape, writable), then updates
them all: a bad gradient or a mismatched state raises before any parameter,
buffer or the step count has changed. Hyperparameters are checked when they are
set (``opt.lr = "0.01"`` raises TypeError on that line and keeps the old value),
so a step never meets a bad one. A NaN or inf in a gradient is applied, as
PyTorch's optimizers do (``minigrad.detect_anomaly()`` finds where it came from);
pass ``check_finite=True`` to refuse it instead, at the cost of one pass over
every gradient per step.

Updates are made in place and, like PyTorch's ``p.add_(g, alpha=-lr)``, make no
temporary array of the parameter's size: a parameter larger than one block
(``_BLOCK`` numbers) is updated block by block, so the temporaries of the
arithmetic are at most a block each (64 KiB of float64), whatever the size of
the parameter.

``state_dict()`` / ``load_state_dict()`` keep and restore an optimizer in
PyTorch's layout (``state`` keyed by parameter index, one entry in
``param_groups``); ``minigrad.save`` writes it to a file.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping

import numpy as np

from . import capture as _capture
from .tensor import Tensor

__all__ = ["Optimizer", "SGD", "Adam"]

_BLOCK = 8192  # numbers per block of a large update: temporaries of 64 KiB in float64


def _check_hyper(where: str, name: str, value, low: float, high: float = math.inf,
                 high_open: bool = True) -> float:
    """``value`` must be a real number in [low, high) (or [low, high] if not high_open)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{where}: {name} must be a number, got {type(value).__name__} {value!r}")
    v = float(value)
    ok = low <= v < high if high_open else low <= v <= high
    if not ok or math.isnan(v):
        bracket = ")" if high_open else "]"
        raise ValueError(f"{where}: {name} must be in [{low:g}, {high:g}{bracket}, got {value!r}")
    return v


class _Hyper:
    """A hyperparameter checked when it is set, so that ``step()`` never meets a bad one.

    It defines ``__set__`` only: the checked value goes into the instance's
    ``__dict__`` under the same name, where reading it costs a plain lookup.
    """

    def __init__(self, low: float, high: float = math.inf, label: str | None = None,
                 positive: bool = False):
        self.low, self.high, self.label, self.positive = low, high, label, positive

    def __set_name__(self, owner, name: str) -> None:
        self.name, self.label = name, self.label or name

    def checked(self, obj, value) -> float:
        """``value`` as a float, or the error naming ``obj``'s class and this setting."""
        v = _check_hyper(type(obj).__name__, self.label, value, self.low, self.high)
        if self.positive and v == 0.0:
            raise ValueError(f"{type(obj).__name__}: {self.label} must be positive, got {value!r}")
        return v

    def __set__(self, obj, value) -> None:
        obj.__dict__[self.name] = self.checked(obj, value)


class _Flag:
    """A True/False setting checked when it is set (``opt.nesterov = "no"`` is refused)."""

    def __set_name__(self, owner, name: str) -> None:
        self.name = name

    def __set__(self, obj, value) -> None:
        if not isinstance(value, (bool, np.bool_)):
            raise TypeError(f"{type(obj).__name__}: {self.name} must be True or False, got {value!r}")
        obj.__dict__[self.name] = bool(value)


def _blockwise(kernel: Callable[..., None], out: tuple[np.ndarray, ...],
               inp: tuple[np.ndarray, ...], *args) -> None:
    """``kernel(*out, *inp, *args)``, which writes ``out`` in place, one block at a time.

    For a parameter larger than ``_BLOCK`` numbers (a smaller one is passed to
    the kernel whole). The blocks come from ``np.nditer``: views where the
    arrays allow it, buffered and written back where they do not; so the
    kernel's temporaries are the size of a block, not of the parameter.
    """
    it = np.nditer(out + inp, flags=["external_loop", "buffered", "zerosize_ok"],
                   op_flags=[["readwrite"]] * len(out) + [["readonly"]] * len(inp),
                   buffersize=_BLOCK, order="K")
    with it:
        for blocks in it:
            kernel(*blocks, *args)


def _label(i: int, p: Tensor) -> str:
    """'parameter 3', or 'parameter 3 ('w')' for a named tensor."""
    return f"parameter {i}" if p.name is None else f"parameter {i} ({p.name!r})"


class Optimizer:
    """Holds a list of parameters; ``step()`` updates those that have a ``.grad``."""

    lr = _Hyper(0.0, positive=True)
    check_finite = _Flag()
    _buffers: tuple[str, ...] = ()   # the arrays kept per parameter, by name
    _counters: tuple[str, ...] = ()  # the integers kept per parameter

    def __init__(self, params: Iterable[Tensor], lr: float, check_finite: bool = False):
        name = type(self).__name__
        self.check_finite = check_finite
        self.params = list(params)
        if not self.params:
            raise ValueError(f"{name}: got no parameters to optimise")
        seen: dict[int, int] = {}
        for i, p in enumerate(self.params):
            if not isinstance(p, Tensor) or not p.requires_grad:
                raise ValueError(f"{name}: parameter {i} is not a Tensor with requires_grad=True "
                                 f"(got {type(p).__name__})")
            if id(p) in seen:
                raise ValueError(f"{name}: parameter {i} is the same Tensor as parameter "
                                 f"{seen[id(p)]}; it would be updated twice per step")
            if p.grad_fn is not None:
                raise ValueError(f"{name}: can't optimize a non-leaf Tensor: parameter {i} (shape "
                                 f"{p.shape}) was computed by '{p.op}'; optimize the leaves it "
                                 f"was computed from")
            seen[id(p)] = i
        for i, p in enumerate(self.params):  # views of one buffer would be updated twice
            for j in range(i):
                q = self.params[j]
                if np.may_share_memory(p.data, q.data) and np.shares_memory(p.data, q.data):
                    raise ValueError(f"{name}: parameters {j} (shape {q.shape}) and {i} (shape "
                                     f"{p.shape}) share memory; an update of one would change "
                                     f"the other")
        self.lr = lr
        self.steps = 0  # completed calls to step()
        self.state: dict[int, dict[str, np.ndarray]] = {}

    def zero_grad(self) -> None:
        for p in self.params:
            p.grad = None

    def step(self) -> None:
        """Update every parameter that has a gradient (parameters without one are skipped)."""
        name, check_finite, state = type(self).__name__, self.check_finite, self.state
        live = []
        for i, p in enumerate(self.params):  # check everything before changing anything
            g = p.grad
            if g is not None:
                if (check_finite or type(g) is not np.ndarray or g.shape != p.data.shape
                        or g.dtype.kind != "f" or not p.data.flags.writeable):
                    _check_param(name, i, p, check_finite)  # raises, unless the grad will do
                s = state.get(i)
                if s is not None and not self._state_fits(s, p.data.shape):
                    self._check_state(f"{name}.step", i, p, s)  # raises, saying what is wrong
                live.append((i, p))
        if _capture.observers:  # a recording trace or compile sees the update (or refuses it)
            _capture.notify("step", self, live)
        self._apply(live)

    def _apply(self, live: list) -> None:
        """The update itself, once the checks passed: ``live`` is ``[(index, parameter), ...]``.

        A compiled step (``minigrad.compile``) calls this directly: its program
        already knows which parameters have a gradient of the right shape.
        """
        self.steps += 1
        for i, p in live:
            self._update(i, p)
            p._vc[0] += 1  # an in-place change: values saved from p are now stale

    def _update(self, i: int, p: Tensor) -> None:
        raise NotImplementedError

    def _state_fits(self, s, shape: tuple) -> bool:
        """The common case, quickly; False sends ``s`` to the full ``_check_state``.

        Each subclass spells out its own buffers here.
        """
        return False

    def _check_state(self, where: str, i: int, p: Tensor, s) -> None:
        """Raise unless ``s`` holds exactly this optimizer's buffers for ``p``, of p's shape."""
        what = _label(i, p)
        if not isinstance(s, dict):
            raise TypeError(f"{where}: the state of {what} is a {type(s).__name__}; expected a "
                            f"dict with {list(self._buffers + self._counters)}")
        for key in self._buffers + self._counters:
            if key not in s:
                raise KeyError(f"{where}: the state of {what} has no {key!r} (it holds "
                               f"{sorted(s)}); expected {list(self._buffers + self._counters)}")
        extra = set(s) - set(self._buffers + self._counters)
        if extra:
            raise KeyError(f"{where}: the state of {what} holds {sorted(extra)}, which "
                           f"{type(self).__name__} does not keep; expected "
                           f"{list(self._buffers + self._counters)}")
        for key in self._buffers:
            b = s[key]
            if not isinstance(b, np.ndarray) or b.dtype.kind != "f":
                kind = f"an array of dtype {b.dtype}" if isinstance(b, np.ndarray) else type(b).__name__
                raise TypeError(f"{where}: the state {key!r} of {what} is {kind}; expected a "
                                f"floating-point array of shape {p.shape}")
            if b.shape != p.shape:
                raise RuntimeError(f"{where}: {what} has shape {p.shape} but its state {key!r} "
                                   f"has shape {b.shape} (was p.data replaced?); nothing was "
                                   f"updated. Drop the stale state with opt.state.pop({i})")
            if not b.flags.writeable:
                raise ValueError(f"{where}: the state {key!r} of {what} (shape {b.shape}) is "
                                 f"read-only; it cannot be updated in place")
        for key in self._counters:
            n = s[key]
            if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)):
                raise TypeError(f"{where}: the state {key!r} of {what} must be an integer, got "
                                f"{type(n).__name__} {n!r}")
            if n < 0:
                raise ValueError(f"{where}: the state {key!r} of {what} must be >= 0, got {n}")

    def state_nbytes(self) -> int:
        """Bytes held by the optimizer's buffers."""
        return sum(a.nbytes for s in self.state.values() for a in s.values()
                   if isinstance(a, np.ndarray))

    # ------------------------------------------------------------ keeping it
    def _hyper(self) -> dict:
        """The hyperparameters, by the constructor's names."""
        return {"lr": self.lr, "check_finite": self.check_finite}

    def _set_hyper(self, group: Mapping) -> None:
        if not isinstance(group["check_finite"], (bool, np.bool_)):
            raise TypeError(f"{type(self).__name__}: check_finite must be True or False, got "
                            f"{group['check_finite']!r}")
        self.lr = group["lr"]
        self.check_finite = group["check_finite"]

    def state_dict(self) -> dict:
        """The optimizer's state in PyTorch's layout, plus the step count.

        ``{"state": {index: {buffer name: array, ...}}, "param_groups": [{hyper-
        parameters..., "params": [0, 1, ...]}], "steps": n}``. minigrad's
        optimizers have one parameter group, and their buffers keep minigrad's
        names (``momentum``; ``m``, ``v``, ``step``, for PyTorch's
        ``momentum_buffer``; ``exp_avg``, ``exp_avg_sq``, ``step``). As in
        PyTorch, the arrays are the optimizer's own, not copies.
        """
        group = self._hyper()
        group["params"] = list(range(len(self.params)))
        return {"state": {i: dict(s) for i, s in self.state.items()},
                "param_groups": [group], "steps": self.steps}

    def load_state_dict(self, state_dict: Mapping) -> None:
        """Restore what ``state_dict()`` returned, for the same parameters in the same order.

        Everything is checked first (the layout, each hyperparameter, each
        buffer's name and shape against its parameter); on any error nothing
        changes. The arrays are copied (in each parameter's dtype).
        """
        name = f"{type(self).__name__}.load_state_dict"
        if not isinstance(state_dict, Mapping):
            raise TypeError(f"{name}: expected a dict, got {type(state_dict).__name__}")
        keys = set(state_dict)
        if not {"state", "param_groups"} <= keys or not keys <= {"state", "param_groups", "steps"}:
            raise ValueError(f"{name}: expected the keys 'state', 'param_groups' and 'steps', "
                             f"got {sorted(map(str, keys))}")
        groups = state_dict["param_groups"]
        if not isinstance(groups, (list, tuple)) or len(groups) != 1 or not isinstance(groups[0], Mapping):
            raise ValueError(f"{name}: minigrad's optimizers have one parameter group; got "
                             f"param_groups={groups!r:.200}")
        group = dict(groups[0])
        n = len(self.params)
        params = group.pop("params", None)
        if not isinstance(params, (list, tuple)) or list(params) != list(range(n)):
            raise ValueError(f"{name}: the saved group's params are {params!r:.200}, but this "
                             f"optimizer has {n} parameters (expected params [0, ..., {n - 1}])")
        want = set(self._hyper())
        if set(group) != want:
            raise ValueError(f"{name}: the saved group has hyperparameters {sorted(group)}, "
                             f"expected {sorted(want)}")
        trial = object.__new__(type(self))   # the setters check each value, on a scratch object
        trial._set_hyper(group)
        steps = state_dict.get("steps", self.steps)
        if isinstance(steps, (bool, np.bool_)) or not isinstance(steps, (int, np.integer)) or steps < 0:
            raise ValueError(f"{name}: steps must be an integer >= 0, got {steps!r}")
        state = state_dict["state"]
        if not isinstance(state, Mapping):
            raise TypeError(f"{name}: 'state' must be a dict keyed by parameter index, got "
                            f"{type(state).__name__}")
        for i, s in state.items():
            if isinstance(i, (bool, np.bool_)) or not isinstance(i, (int, np.integer)) or not 0 <= i < n:
                raise ValueError(f"{name}: the state is keyed by {i!r}, not a parameter index "
                                 f"from 0 to {n - 1}")
            s = dict(s) if isinstance(s, Mapping) else s
            if isinstance(s, dict):   # arrays as saved may be read-only: they are copied below
                s = {k: (np.array(v) if isinstance(v, np.ndarray) else v) for k, v in s.items()}
            self._check_state(name, int(i), self.params[i], s)
        self._set_hyper(group)
        self.steps = int(steps)
        self.state = {int(i): {k: (np.array(v, dtype=self.params[i].dtype) if isinstance(v, np.ndarray)
                                   else int(v)) for k, v in s.items()}
                      for i, s in state.items()}


def _check_param(name: str, i: int, p: Tensor, check_finite: bool) -> None:
    """Raise if ``p``'s gradient could not be applied (or, if asked, would make ``p`` NaN or inf)."""
    g, data = p.grad, p.data
    if isinstance(g, Tensor):
        raise TypeError(f"{name}.step: {_label(i, p)} (shape {p.shape}) has a grad that is a Tensor "
                        f"with a graph, as backward(create_graph=True) leaves it; the optimizer "
                        f"updates from arrays: set p.grad = p.grad.data to step with its values "
                        f"(minigrad.grad(..., create_graph=True) gives gradients to differentiate "
                        f"without leaving them in .grad)")
    if type(g) is not np.ndarray and not isinstance(g, np.ndarray):
        raise TypeError(f"{name}.step: {_label(i, p)} (shape {p.shape}) has a grad of type "
                        f"{type(g).__name__}; expected a NumPy array")
    if g.shape != data.shape:
        raise ValueError(f"{name}.step: {_label(i, p)} has shape {p.shape} "
                         f"but its grad has shape {g.shape}")
    if g.dtype.kind not in "biuf":
        raise ValueError(f"{name}.step: {_label(i, p)} (shape {p.shape}) has a grad of dtype "
                         f"{g.dtype}; a gradient must be real")
    # one sum is cheaper than an elementwise test; a sum that overflows is checked in full
    if check_finite and g.dtype.kind == "f" and not math.isfinite(g.sum()) and not np.isfinite(g).all():
        n_nan, n_inf = int(np.isnan(g).sum()), int(np.isinf(g).sum())
        raise ValueError(f"{name}.step: {_label(i, p)} (shape {p.shape}) has a grad with "
                         f"{n_nan} NaN and {n_inf} inf; nothing was updated")
    if not data.flags.writeable:
        raise ValueError(f"{name}.step: {_label(i, p)} (shape {p.shape}) has read-only data; "
                         f"it cannot be updated in place")


class SGD(Optimizer):
    """p -= lr * v, with v = momentum * v + (grad + weight_decay * p) (PyTorch's form).

    On a parameter's first step v = grad (no dampening). With momentum 0 no
    buffer is kept. ``nesterov=True`` steps along grad + momentum * v instead
    of v (Sutskever et al., 2013, in PyTorch's form). The defaults are
    PyTorch's (lr 1e-3, no momentum, no decay, no Nesterov).
    """

    momentum = _Hyper(0.0, 1.0)
    weight_decay = _Hyper(0.0)
    nesterov = _Flag()
    _buffers = ("momentum",)

    def __init__(self, params, lr: float = 1e-3, momentum: float = 0.0, weight_decay: float = 0.0,
                 nesterov: bool = False, check_finite: bool = False):
        super().__init__(params, lr, check_finite)
        self.momentum = momentum
        self.weight_decay = weight_decay
        self.nesterov = nesterov
        if nesterov and not self.momentum:
            raise ValueError("SGD: Nesterov momentum needs a momentum > 0")

    @staticmethod
    def _state_fits(s, shape: tuple) -> bool:
        if type(s) is not dict or len(s) != 1:
            return False
        v = s.get("momentum")
        return type(v) is np.ndarray and v.shape == shape and v.dtype.kind == "f" and v.flags.writeable

    def _hyper(self) -> dict:
        return {"lr": self.lr, "momentum": self.momentum, "weight_decay": self.weight_decay,
                "nesterov": self.nesterov, "check_finite": self.check_finite}

    def _set_hyper(self, group: Mapping) -> None:
        nesterov = group["nesterov"]
        if not isinstance(nesterov, (bool, np.bool_)):
            raise TypeError(f"SGD: nesterov must be True or False, got {nesterov!r}")
        super()._set_hyper(group)
        self.momentum, self.weight_decay = group["momentum"], group["weight_decay"]
        self.nesterov = bool(nesterov)

    def _update(self, i: int, p: Tensor) -> None:
        d, g, mu = p.data, p.grad, self.momentum
        if not mu:
            if d.size <= _BLOCK and not self.weight_decay:
                d -= self.lr * g
            elif d.size <= _BLOCK:
                _sgd(d, g, self.lr, self.weight_decay)
            else:
                _blockwise(_sgd, (d,), (g,), self.lr, self.weight_decay)
            return
        s = self.state.get(i)
        first = s is None
        if first:
            s = self.state[i] = {"momentum": np.empty_like(d)}
        args = (self.lr, mu, self.weight_decay, self.nesterov, first)
        if d.size <= _BLOCK:
            _sgd_momentum(d, s["momentum"], g, *args)
        else:
            _blockwise(_sgd_momentum, (d, s["momentum"]), (g,), *args)


# The updates, on whole small parameters or on blocks of large ones: d is the
# parameter's data, g its gradient, m and v buffers; each writes d (and the
# buffers) in place.

def _sgd(d, g, lr, wd):
    d -= lr * (g + wd * d) if wd else lr * g


def _sgd_momentum(d, v, g, lr, mu, wd, nesterov, first):
    if wd:
        g = g + wd * d
    if first:
        v[...] = g
    else:
        v *= mu
        v += g
    d -= lr * (g + mu * v) if nesterov else lr * v


def _adam(d, m, v, g, lr, b1, b2, eps, wd, c1, c2):
    if wd:
        g = g + wd * d
    m *= b1
    m += (1 - b1) * g
    v *= b2
    v += (1 - b2) * g * g
    d -= lr * (m / c1) / (np.sqrt(v / c2) + eps)


class Adam(Optimizer):
    """Kingma & Ba (2015). m, v: running means of g and g^2, bias-corrected by step t.

    m = b1 m + (1 - b1) g,   v = b2 v + (1 - b2) g^2,
    p -= lr * m_hat / (sqrt(v_hat) + eps),  m_hat = m / (1 - b1^t),  v_hat = v / (1 - b2^t).

    t counts the steps in which *this* parameter had a gradient (as in PyTorch),
    so a parameter that joins late gets the right bias correction.
    """

    b1 = _Hyper(0.0, 1.0, label="betas[0]")
    b2 = _Hyper(0.0, 1.0, label="betas[1]")
    eps = _Hyper(0.0)
    weight_decay = _Hyper(0.0)
    _buffers = ("m", "v")
    _counters = ("step",)

    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.0, check_finite: bool = False):
        super().__init__(params, lr, check_finite)
        self.b1, self.b2 = self._betas(betas)
        self.eps = eps
        self.weight_decay = weight_decay

    @staticmethod
    def _betas(betas) -> tuple:
        try:
            b1, b2 = betas
        except (TypeError, ValueError):
            raise ValueError(f"Adam: betas must be a pair (b1, b2), got {betas!r}") from None
        return b1, b2

    @property
    def betas(self) -> tuple:
        """(b1, b2); setting it checks both, as the constructor does."""
        return self.b1, self.b2

    @betas.setter
    def betas(self, betas) -> None:
        b1, b2 = self._betas(betas)
        self.b1, self.b2 = Adam.b1.checked(self, b1), Adam.b2.checked(self, b2)  # both checked first

    @property
    def t(self) -> int:
        """Calls to step() so far."""
        return self.steps

    @staticmethod
    def _state_fits(s, shape: tuple) -> bool:
        if type(s) is not dict or len(s) != 3:
            return False
        m, v, t = s.get("m"), s.get("v"), s.get("step")
        return (type(m) is np.ndarray and type(v) is np.ndarray and type(t) is int and t >= 0
                and m.shape == shape == v.shape and m.dtype.kind == v.dtype.kind == "f"
                and m.flags.writeable and v.flags.writeable)

    def _hyper(self) -> dict:
        return {"lr": self.lr, "betas": (self.b1, self.b2), "eps": self.eps,
                "weight_decay": self.weight_decay, "check_finite": self.check_finite}

    def _set_hyper(self, group: Mapping) -> None:
        b1, b2 = self._betas(group["betas"])
        super()._set_hyper(group)
        self.b1, self.b2, self.eps, self.weight_decay = b1, b2, group["eps"], group["weight_decay"]

    def _update(self, i: int, p: Tensor) -> None:
        s = self.state.get(i)
        if s is None:
            s = self.state[i] = {"m": np.zeros_like(p.data), "v": np.zeros_like(p.data), "step": 0}
        s["step"] += 1
        t = s["step"]
        b1, b2 = self.b1, self.b2
        args = (self.lr, b1, b2, self.eps, self.weight_decay, 1 - b1 ** t, 1 - b2 ** t)
        d = p.data
        if d.size <= _BLOCK:
            _adam(d, s["m"], s["v"], p.grad, *args)
        else:
            _blockwise(_adam, (d, s["m"], s["v"]), (p.grad,), *args)
