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
(layers and optimizers), ``data`` (the digits dataset, splits, mini-batches),
``metrics`` (accuracy, confusion matrix), ``trace`` (static graphs) and ``passes``
(rewriting them), ``hessian`` (Hessian-vector products), ``hooks`` (watch or count
every op), ``memory`` (measured memory by category), ``checkpoint`` (recompute
activations in backward, and segment schedules), ``reference`` (hand-derived NumPy
versions), ``viz`` (pictures; imported on first use).
"""

import importlib as _importlib

# The core's one import cycle, broken here and nowhere else: Tensor's methods call the
# ops and the engine, which take Tensors, and Function.apply makes Tensors. The four
# modules import nothing of each other's at load time that is not yet defined; once
# they are loaded, the tensor module and the function module are introduced.
from . import function as _function, tensor as _tensor  # noqa: I001
from . import engine as _engine_module, ops as _ops_module
_tensor._engine, _tensor._ops = _engine_module, _ops_module
_function.Tensor, _function.as_tensor = _tensor.Tensor, _tensor.as_tensor
_function._make_tensor = _tensor.Tensor._make

from . import data, flow, memory, metrics, nn, optim, passes, random, reference
from .checkpointing import Plan, checkpoint, checkpoint_sequential, plan_segments, sqrt_plan, uniform_plan
from .engine import backward, grad, topological_order
from .forward import jacfwd, jvp
from .function import AnomalyError, Context, Function, detect_anomaly, enable_grad, is_grad_enabled, no_grad
from .gradcheck import GradcheckError, gradcheck, numerical_grad
from .hessians import hessian, hvp
from .hooks import count_ops, op_hook
from .inspect import format_saved, saved_memory, saved_values
from .jacobians import jacobian, jacobian_nbytes, numerical_jacobian, vjp
from .ops import batch_norm, cat, concatenate, layer_norm, maximum, minimum, stack, where
from .tensor import Tensor, as_tensor
from .tracing import StaticGraph, trace

__version__ = "0.1.0"

__all__ = ["Tensor", "as_tensor", "Function", "Context", "backward", "grad",
           "topological_order", "no_grad", "enable_grad", "is_grad_enabled",
           "detect_anomaly", "AnomalyError", "gradcheck", "numerical_grad",
           "GradcheckError", "trace", "StaticGraph", "nn", "optim", "random", "reference",
           "data", "metrics", "inspect", "saved_values", "saved_memory", "format_saved",
           "jacobian", "numerical_jacobian", "vjp", "jacobian_nbytes", "jvp", "jacfwd",
           "flow", "layer_norm", "batch_norm", "hvp", "hessian", "passes",
           "memory", "checkpoint", "checkpoint_sequential", "Plan", "plan_segments", "sqrt_plan",
           "uniform_plan", "count_ops", "op_hook", "where", "maximum", "minimum", "stack",
           "concatenate", "cat"]


_LAZY = {"viz"}  # imports matplotlib and graphviz: only when asked for


def __getattr__(name):
    if name in _LAZY:
        return _importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'minigrad' has no attribute {name!r}")

from .compiling import compile as compile  # noqa: E402,A001 (minigrad.compile, as torch.compile)
