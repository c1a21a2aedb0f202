"""Measure gradient flow: what each layer of a deep network hands forward and back.

Backpropagation multiplies local Jacobians. For layers h_l = f_l(h_{l-1}),

    dL/dh_{l-1} = dL/dh_l @ J_l,    J_l = dh_l / dh_{l-1},

so the gradient that reaches layer l is dL/dh_L times the product of the L - l
Jacobians above it. If those factors shrink vectors, the gradient vanishes with
depth; if they stretch them, it explodes. The helpers here only *measure*: they
run a model layer by layer, keep every layer's output, and ask the engine for
dL/d(output) and dL/dW of every layer. They never touch ``.grad``.

A "layer" is a group of consecutive modules of a ``Sequential`` that starts at
a module owning a weight matrix (a parameter with two or more axes): so
``Linear, Tanh, Linear, Tanh`` is two layers, and so is a ``Sequential`` of two
blocks, or of two ``Residual`` blocks. Modules without a matrix (activations,
``LayerNorm``, ``BatchNorm1d``, ``Dropout``) belong to the layer before them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from .engine import grad as _grad
from .nn import Module, Sequential
from .tensor import Tensor

__all__ = ["FlowRecord", "layer_groups", "layer_weights", "record_flow", "update_ratios"]


def _has_matrix(m: Module) -> bool:
    return any(p.ndim >= 2 for p in m.parameters())


def layer_groups(model: Sequential | Sequence[Module]) -> list[list[Module]]:
    """Split a Sequential into layers: a new layer starts at each module that owns a matrix."""
    if isinstance(model, Sequential):
        modules = list(model.layers)
    elif isinstance(model, (list, tuple)):
        modules = list(model)
    else:
        modules = []
    if not modules or not all(isinstance(m, Module) for m in modules):
        raise TypeError(f"layer_groups: expected a Sequential or a list of Modules, "
                        f"got {type(model).__name__}")
    groups: list[list[Module]] = []
    for m in modules:
        if not groups or _has_matrix(m):
            groups.append([m])
        else:
            groups[-1].append(m)
    return groups


def layer_weights(model: Sequential | Sequence[Module]) -> list[list[Tensor]]:
    """The weight matrices (parameters with two or more axes) of each layer, in order."""
    return [[p for m in group for p in m.parameters() if p.ndim >= 2]
            for group in layer_groups(model)]


def _name(group: list[Module]) -> str:
    return " + ".join(repr(m).split("\n", 1)[0].rstrip("(") for m in group)


@dataclass
class FlowRecord:
    """One forward and backward pass, seen layer by layer (index 0 is the first layer).

    Fields (lists with one entry per layer):
        names: what each layer is made of, e.g. "Linear(64, 64, bias=True) + Tanh()".
        activations: h_l, the output the layer hands on.
        activation_grads: dL/dh_l.
        weights, weight_grads: the layer's weight matrices and dL/dW, flattened
            and concatenated (one 1-D array per layer; empty if it has none).
        loss: the value of the loss.
    """

    names: list[str]
    activations: list[np.ndarray]
    activation_grads: list[np.ndarray]
    weights: list[np.ndarray]
    weight_grads: list[np.ndarray]
    loss: float

    def __len__(self) -> int:
        return len(self.names)

    @staticmethod
    def _per_layer(arrays: list[np.ndarray], f: Callable[[np.ndarray], float]) -> np.ndarray:
        return np.array([f(a) if a.size else np.nan for a in arrays])

    def grad_mean_abs(self) -> np.ndarray:
        """mean |dL/dW| of each layer."""
        return self._per_layer(self.weight_grads, lambda a: float(np.mean(np.abs(a))))

    def grad_max_abs(self) -> np.ndarray:
        """max |dL/dW| of each layer."""
        return self._per_layer(self.weight_grads, lambda a: float(np.max(np.abs(a))))

    def activation_grad_rms(self) -> np.ndarray:
        """sqrt(mean (dL/dh_l)^2) of each layer: the size of the gradient flowing back."""
        return self._per_layer(self.activation_grads, lambda a: float(np.sqrt(np.mean(a * a))))

    def activation_rms(self) -> np.ndarray:
        """sqrt(mean h_l^2) of each layer: the size of the signal flowing forward."""
        return self._per_layer(self.activations, lambda a: float(np.sqrt(np.mean(a * a))))

    def activation_std(self) -> np.ndarray:
        """The standard deviation of each layer's output over all its entries."""
        return self._per_layer(self.activations, lambda a: float(np.std(a)))

    def first_to_last(self) -> float:
        """mean |dL/dW| of the first layer divided by that of the last."""
        g = self.grad_mean_abs()
        return float(g[0] / g[-1])

    def update_ratios(self, lr: float) -> np.ndarray:
        """lr * ||dL/dW|| / ||W|| per layer: how far one SGD step moves each layer's weights."""
        return np.array([lr * np.linalg.norm(g) / np.linalg.norm(w) if w.size else np.nan
                         for w, g in zip(self.weights, self.weight_grads)])


def record_flow(model: Sequential | Sequence[Module], x, loss_fn: Callable[[Tensor], Tensor]
                ) -> FlowRecord:
    """Run ``model`` on ``x`` layer by layer and record each layer's output and gradients.

    ``loss_fn(output)`` must return a one-element Tensor. The gradients come from
    ``minigrad.grad`` (as ``retain_grad()`` on every output would give them), so
    no ``.grad`` is changed and the graph is released afterwards.
    """
    groups = layer_groups(model)
    weights = layer_weights(model)
    h = x if isinstance(x, Tensor) else Tensor(x)
    outputs = []
    for group in groups:
        for m in group:
            h = m(h)
        outputs.append(h)
    loss = loss_fn(h)
    if not isinstance(loss, Tensor) or loss.size != 1:
        raise ValueError(f"record_flow: loss_fn must return a one-element Tensor, got "
                         f"{type(loss).__name__} of shape {getattr(loss, 'shape', None)}")
    flat = [w for ws in weights for w in ws]
    for i, o in enumerate(outputs):
        if not o.requires_grad:
            raise ValueError(f"record_flow: the output of layer {i} ({_name(groups[i])}) does not "
                             f"depend on any parameter, so it has no gradient")
    grads = _grad(loss, outputs + flat, allow_unused=True)
    act_grads = [np.zeros_like(o.data) if g is None else g.data for o, g in zip(outputs, grads)]
    w_grads_flat = [np.zeros_like(w.data) if g is None else g.data
                    for w, g in zip(flat, grads[len(outputs):])]
    it = iter(w_grads_flat)
    w_grads = [[next(it) for _ in ws] for ws in weights]

    def cat(arrays: list[np.ndarray]) -> np.ndarray:
        return np.concatenate([a.ravel() for a in arrays]) if arrays else np.zeros(0)

    return FlowRecord(
        names=[_name(g) for g in groups],
        activations=[o.data for o in outputs],
        activation_grads=act_grads,
        weights=[cat([w.data.copy() for w in ws]) for ws in weights],
        weight_grads=[cat(gs) for gs in w_grads],
        loss=float(loss.data),
    )


def update_ratios(model: Sequential | Sequence[Module], lr: float) -> np.ndarray:
    """lr * ||W.grad|| / ||W|| for each layer's weight matrices, read from ``.grad``.

    For plain SGD this is ||update|| / ||W||, the fraction of the weights one
    step changes; a common rule of thumb is that it should sit near 1e-3.
    Layers whose matrices have no ``.grad`` yet give NaN.
    """
    out = []
    for ws in layer_weights(model):
        if not ws or any(w.grad is None for w in ws):
            out.append(np.nan)
            continue
        g = np.sqrt(sum(float(np.sum(w.grad ** 2)) for w in ws))
        d = np.sqrt(sum(float(np.sum(w.data ** 2)) for w in ws))
        out.append(lr * g / d)
    return np.array(out)
