"""minigrad: a small NumPy autograd engine for learning how PyTorch works inside.

    from minigrad import Tensor
    x = Tensor([[1.0, 2.0]])
    w = Tensor([[0.1], [0.2]], requires_grad=True)
    loss = (x @ w).sum()
    loss.backward()
    w.grad            # dloss/dw

Modules: the core is ``tensor`` (the Tensor), ``ops`` (every op: its forward,
VJP and JVP side by side), ``function`` (how an op records its backward node;
no_grad; anomaly mode) and ``engine`` (backward and grad). Around it:
``gradcheck`` (numerical checks), ``jacobians`` (full Jacobians), ``forward``
(forward mode: jvp, jacfwd), ``hessians`` (Hessian-vector products), ``nn`` and
``optim`` (layers and optimizers), ``data`` (the digits dataset, splits,
mini-batches), ``metrics`` (accuracy, confusion matrix), ``tracing`` (static
graphs) and ``passes`` (rewriting them), ``compiling`` (a whole training step
captured as one NumPy program), ``hooks`` (watch or count every op),
``inspect`` (what a graph saves), ``serialization`` (save and load without
pickle), ``memory`` (measured memory by category),
``flow`` (gradient flow), ``checkpointing`` (recompute activations in backward)
and ``planner`` (segment schedules), ``reference`` (hand-derived NumPy
versions), ``viz`` (pictures; imported on first use).
"""

import importlib as _importlib

# The core (tensor, function, ops, engine) closes its own import cycle with imports at the
# ends of tensor.py and function.py, where a reader sees them.
from .tensor import Tensor, as_tensor  # noqa: I001

from . import data, flow, memory, metrics, nn, optim, passes, random, reference
from .compiling import compile  # noqa: A004 (minigrad.compile, as torch.compile)
from .checkpointing import Plan, checkpoint, checkpoint_sequential, plan_segments, sqrt_plan, uniform_plan
from .engine import backward, grad, topological_order
from .forward import jacfwd, jvp
from .function import (AnomalyError, Context, Function, SavedValue, ShapeError, detect_anomaly, enable_grad,
                       is_grad_enabled, no_grad, set_grad_enabled)
from .gradcheck import GradcheckError, gradcheck, numerical_grad
from .hessians import hessian, hvp
from .hooks import count_ops, op_hook
from .inspect import format_saved, saved_memory, saved_values
from .serialization import load, save
from .jacobians import jacobian, jacobian_nbytes, numerical_jacobian, vjp
from .ops import batch_norm, cat, concatenate, layer_norm, maximum, minimum, stack, where
from .tracing import StaticGraph, trace

__version__ = "0.1.0"

__all__ = ["Tensor", "as_tensor", "Function", "Context", "backward", "grad",
           "topological_order", "no_grad", "enable_grad", "is_grad_enabled",
           "detect_anomaly", "AnomalyError", "ShapeError", "SavedValue", "set_grad_enabled", "gradcheck",
           "numerical_grad",
           "GradcheckError", "trace", "StaticGraph", "nn", "optim", "random", "reference",
           "data", "metrics", "inspect", "saved_values", "saved_memory", "format_saved",
           "jacobian", "numerical_jacobian", "vjp", "jacobian_nbytes", "jvp", "jacfwd",
           "flow", "layer_norm", "batch_norm", "hvp", "hessian", "passes",
           "memory", "checkpoint", "checkpoint_sequential", "Plan", "plan_segments", "sqrt_plan",
           "uniform_plan", "count_ops", "op_hook", "where", "maximum", "minimum", "stack",
           "concatenate", "cat", "save", "load", "compile"]


_LAZY = {"viz"}  # imports matplotlib and graphviz: only when asked for


def __getattr__(name):
    if name in _LAZY:
        return _importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'minigrad' has no attribute {name!r}")

