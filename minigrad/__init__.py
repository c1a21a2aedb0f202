"""minigrad: a small NumPy autograd engine for learning how PyTorch works inside.

    from minigrad import Tensor
    x = Tensor([[1.0, 2.0]])
    w = Tensor([[0.1], [0.2]], requires_grad=True)
    loss = (x @ w).sum()
    loss.backward()
    w.grad            # dloss/dw

Modules: ``tensor`` (the Tensor), ``ops`` (every op's forward and VJP),
``function`` (how ops record the graph; no_grad; anomaly mode), ``engine``
(backward and grad), ``gradcheck`` (numerical checks), ``nn`` and ``optim``
(layers and optimizers), ``trace`` (static graphs), ``reference`` (hand-derived
NumPy versions), ``viz`` (pictures; imported on first use), ``hooks`` (watch or
count every op), ``memory`` (measured memory by category), ``checkpoint``
(recompute activations in backward, and segment schedules).
"""

import importlib as _importlib

from . import (  # noqa: E402,I001
    memory,  # noqa: E402,I001
    nn,
    optim,
    random,
    reference,
)
from .checkpoint import Plan, checkpoint, checkpoint_sequential, plan_segments, sqrt_plan, uniform_plan
from .engine import backward, grad, topological_order
from .function import AnomalyError, Context, Function, detect_anomaly, enable_grad, is_grad_enabled, no_grad
from .gradcheck import GradcheckError, gradcheck, numerical_grad
from .hooks import count_ops, op_hook
from .tensor import Tensor, as_tensor
from .trace import StaticGraph, trace

__version__ = "0.1.0"

__all__ = ["Tensor", "as_tensor", "Function", "Context", "backward", "grad",
           "topological_order", "no_grad", "enable_grad", "is_grad_enabled",
           "detect_anomaly", "AnomalyError", "gradcheck", "numerical_grad",
           "GradcheckError", "trace", "StaticGraph", "nn", "optim", "random", "reference",
           "memory", "checkpoint", "checkpoint_sequential", "Plan", "plan_segments", "sqrt_plan",
           "uniform_plan", "count_ops", "op_hook"]

_LAZY = {"viz"}  # imports matplotlib and graphviz: only when asked for


def __getattr__(name):
    if name in _LAZY:
        return _importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'minigrad' has no attribute {name!r}")
