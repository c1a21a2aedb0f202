"""What is measured: one MLP training step written several ways, a deep chain, memory.

Every implementation of the MLP step starts from the same numbers
(``minigrad.reference.toy_problem`` for the tiny size, ``mlp_problem`` otherwise)
and does the same arithmetic:

    forward   logits = relu(x @ W1 + b1) @ W2 + b2
    loss      mean cross-entropy of softmax(logits), fused (logsumexp form)
    backward  dL/dW1, dL/db1, dL/dW2, dL/db2
    update    p -= lr * dL/dp  (plain SGD)

``make_step(impl, size)`` returns a zero-argument function that runs one step,
and ``loss_and_grads(impl, size)`` the loss and gradients of the first step, so
the implementations can be checked against each other before anything is timed.

Nothing here imports torch at module level: PyTorch is optional.
"""

from __future__ import annotations

import importlib.util
import types

import numpy as np

from minigrad.reference import mlp_problem, mlp_step, toy_problem

LR = 0.01

# size -> batch, (inputs, hidden, classes), bias
SIZES = {
    "tiny": (3, (3, 4, 2), False),      # the reading's example
    "small": (64, (784, 128, 10), True),
    "large": (512, (784, 1024, 10), True),
}

IMPLS = ("numpy-f64", "minigrad-f64", "compiled-f64", "torch-f64",
         "numpy-f32", "minigrad-f32", "compiled-f32", "torch-f32")


def torch_available() -> bool:
    return importlib.util.find_spec("torch") is not None


def impl_parts(impl: str) -> tuple[str, type]:
    """'minigrad-f32' -> ('minigrad', np.float32)."""
    lib, bits = impl.rsplit("-", 1)
    return lib, {"f64": np.float64, "f32": np.float32}[bits]


def problem(size: str, dtype=np.float64):
    """x, y and [w1, b1, w2, b2] (biases None for the tiny size), all in ``dtype``."""
    batch, sizes, bias = SIZES[size]
    if size == "tiny":
        x, y, w1, w2 = toy_problem(seed=0)
        return x.astype(dtype), y, [w1.astype(dtype), None, w2.astype(dtype), None]
    return mlp_problem(batch, sizes, seed=0, dtype=dtype, bias=bias)


# ------------------------------------------------------------------- numpy

def _numpy(size: str, dtype):
    x, y, params = problem(size, dtype)

    def step():
        return mlp_step(x, y, params, lr=LR)[0]

    def first():
        loss, grads = mlp_step(x, y, params)
        return float(loss), grads

    return step, first


# ---------------------------------------------------------------- minigrad

def _minigrad(size: str, dtype):
    import minigrad as mg

    x, y, (w1, b1, w2, b2) = problem(size, dtype)
    _, (d, h, c), bias = SIZES[size]
    model = mg.nn.MLP([d, h, c], bias=bias, dtype=dtype)
    first_layer, last_layer = model[0], model[2]
    first_layer.weight = mg.Tensor(w1, requires_grad=True, dtype=dtype)
    last_layer.weight = mg.Tensor(w2, requires_grad=True, dtype=dtype)
    if bias:
        first_layer.bias = mg.Tensor(b1, requires_grad=True, dtype=dtype)
        last_layer.bias = mg.Tensor(b2, requires_grad=True, dtype=dtype)
    opt = mg.optim.SGD(model.parameters(), lr=LR)
    xt = mg.Tensor(x, dtype=dtype)

    def step():
        opt.zero_grad()
        loss = model(xt).cross_entropy_with_logits(y)
        loss.backward()
        opt.step()
        return loss

    def first():
        loss = model(xt).cross_entropy_with_logits(y)
        loss.backward()
        grads = [first_layer.weight.grad, first_layer.bias.grad if bias else None,
                 last_layer.weight.grad, last_layer.bias.grad if bias else None]
        opt.zero_grad()
        return loss.item(), grads

    return step, first


# ---------------------------------------------------------- minigrad.compile

def _compiled(size: str, dtype):
    """The minigrad step under ``minigrad.compile``, captured by a first call before timing."""
    import minigrad as mg

    step, first = _minigrad(size, dtype)
    compiled = mg.compile(step)
    compiled()  # the capture (an eager step): timed separately, by capture_time()
    return compiled, _compiled_first(size, dtype)


def _compiled_first(size: str, dtype):
    """Loss and gradients of the first step as a compiled program computes them (no update)."""
    import minigrad as mg

    def first():
        x, y, (w1, b1, w2, b2) = problem(size, dtype)
        _, (d, h, c), bias = SIZES[size]
        model = mg.nn.MLP([d, h, c], bias=bias, dtype=dtype)
        first_layer, last_layer = model[0], model[2]
        xt = mg.Tensor(x, dtype=dtype)
        params = [(first_layer, "weight", w1), (last_layer, "weight", w2)]
        if bias:
            params += [(first_layer, "bias", b1), (last_layer, "bias", b2)]

        for layer, name, value in params:
            setattr(layer, name, mg.Tensor(value, requires_grad=True, dtype=dtype))

        def grads_step():
            model.zero_grad()
            loss = model(xt).cross_entropy_with_logits(y)
            loss.backward()
            return loss

        compiled = mg.compile(grads_step)
        compiled()             # the capture
        loss = compiled()      # the program
        assert compiled.program is not None and len(compiled.captures) == 1
        grads = [first_layer.weight.grad, first_layer.bias.grad if bias else None,
                 last_layer.weight.grad, last_layer.bias.grad if bias else None]
        return loss.item(), grads

    return first


def capture_time(size: str, dtype=np.float64) -> float:
    """Seconds of the first call of a compiled step (an eager step recorded and turned into code)."""
    import time

    import minigrad as mg

    step, _ = _minigrad(size, dtype)
    compiled = mg.compile(step)
    t = time.perf_counter()
    compiled()
    return time.perf_counter() - t


# ------------------------------------------------------------------ torch

def _torch(size: str, dtype):
    import torch
    import torch.nn.functional as F

    torch.set_num_threads(1)
    tdtype = {np.float64: torch.float64, np.float32: torch.float32}[dtype]
    x, y, (w1, b1, w2, b2) = problem(size, dtype)
    _, (d, h, c), bias = SIZES[size]
    lin1 = torch.nn.Linear(d, h, bias=bias, dtype=tdtype)
    lin2 = torch.nn.Linear(h, c, bias=bias, dtype=tdtype)
    with torch.no_grad():  # torch stores the weight as (out, in): the transpose of ours
        lin1.weight.copy_(torch.from_numpy(w1.T.copy()))
        lin2.weight.copy_(torch.from_numpy(w2.T.copy()))
        if bias:
            lin1.bias.copy_(torch.from_numpy(b1))
            lin2.bias.copy_(torch.from_numpy(b2))
    model = torch.nn.Sequential(lin1, torch.nn.ReLU(), lin2)
    opt = torch.optim.SGD(model.parameters(), lr=LR)
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)

    def step():
        opt.zero_grad()
        loss = F.cross_entropy(model(xt), yt)
        loss.backward()
        opt.step()
        return loss

    def first():
        loss = F.cross_entropy(model(xt), yt)
        loss.backward()
        grads = [lin1.weight.grad.numpy().T, lin1.bias.grad.numpy() if bias else None,
                 lin2.weight.grad.numpy().T, lin2.bias.grad.numpy() if bias else None]
        grads = [None if g is None else g.copy() for g in grads]
        opt.zero_grad()
        return loss.item(), grads

    return step, first


_BUILDERS = {"numpy": _numpy, "minigrad": _minigrad, "compiled": _compiled, "torch": _torch}


def make_step(impl: str, size: str):
    """A function that runs one training step of ``impl`` on the ``size`` problem."""
    lib, dtype = impl_parts(impl)
    return _BUILDERS[lib](size, dtype)[0]


def loss_and_grads(impl: str, size: str):
    """The loss and [dW1, db1, dW2, db2] of the first step (no update), as NumPy."""
    lib, dtype = impl_parts(impl)
    return _BUILDERS[lib](size, dtype)[1]()


def agreement(impls, size: str) -> dict[str, float]:
    """Largest difference of each impl's loss and gradients from NumPy by hand, same dtype.

    Relative to the largest entry of each reference array, so that it reads the
    same for every size: about 1e-16 is float64 round-off, 1e-7 float32's. (A
    float32 run is compared with float32 NumPy, not with float64: a ReLU input
    within round-off of 0 may fall on the other side of the kink in float32,
    which legitimately moves a few gradient entries by a visible amount: float32
    is therefore judged by the 99.9th percentile of the differences, float64 by the
    largest.)
    """
    refs = {}
    out = {}
    for impl in impls:
        bits = impl.rsplit("-", 1)[1]
        if bits not in refs:
            refs[bits] = loss_and_grads(f"numpy-{bits}", size)
        ref_loss, ref_grads = refs[bits]
        loss, grads = loss_and_grads(impl, size)
        worst = abs(loss - ref_loss) / abs(ref_loss)
        for g, r in zip(grads, ref_grads):
            if r is None:
                if g is not None:
                    raise AssertionError(f"{impl} on {size}: a gradient where none is expected")
                continue
            if g.shape != r.shape:
                raise AssertionError(f"{impl} on {size}: gradient shape {g.shape} != {r.shape}")
            scale = max(float(np.max(np.abs(r))), 1e-300)
            diff = np.abs(g.astype(np.float64) - r) / scale
            # float32: a ReLU input within round-off of 0 may fall on the other side of the
            # kink in one BLAS and not in another (seen with MKL against OpenBLAS on dW1),
            # which moves a handful of entries; judge float32 by its 99.9th percentile.
            d = float(np.max(diff)) if bits == "f64" else float(np.quantile(diff, 0.999))
            worst = max(worst, d)
        out[impl] = worst
    return out


# -------------------------------------------------------------- deep chain

CHAIN_OPS = ("mul", "add", "tanh")  # cycled: n ops in all


def make_chain(lib: str, n: int, width: int = 16):
    """Forward and backward closures for a chain of ``n`` elementwise ops on a small vector.

    ``forward()`` builds the graph and returns the output; ``backward(out)`` runs
    backward from its sum. The ops cycle through ``y*0.9``, ``y+0.1``, ``tanh(y)``.
    """
    x0 = np.linspace(-1.0, 1.0, width)
    if lib == "minigrad":
        import minigrad as mg

        x = mg.Tensor(x0, requires_grad=True)
    else:
        import torch

        torch.set_num_threads(1)
        x = torch.tensor(x0, requires_grad=True)

    def forward():
        y = x
        for i in range(n):
            k = i % 3
            y = y * 0.9 if k == 0 else (y + 0.1 if k == 1 else y.tanh())
        return y.sum()

    def backward(out):
        x.grad = None
        out.backward()
        return x.grad

    return forward, backward


def chain_reference(n: int, width: int = 16) -> np.ndarray:
    """d(sum of the chain's output)/dx by hand: the product of the local derivatives."""
    y = np.linspace(-1.0, 1.0, width)
    d = np.ones(width)
    for i in range(n):
        k = i % 3
        if k == 0:
            y, d = y * 0.9, d * 0.9
        elif k == 1:
            y = y + 0.1
        else:
            y = np.tanh(y)
            d = d * (1.0 - y * y)
    return d


# ------------------------------------------------------------------ memory

def checkpoint_fn():
    """``minigrad.checkpoint`` (a function, or a module holding one), or None."""
    import minigrad as mg

    ck = getattr(mg, "checkpoint", None)
    if isinstance(ck, types.ModuleType):
        ck = getattr(ck, "checkpoint", None)
    return ck if callable(ck) else None


def deep_mlp(depth: int, width: int, batch: int, classes: int = 10, seed: int = 0):
    """A ReLU MLP with ``depth`` hidden layers of ``width``, for the memory case."""
    import minigrad as mg

    rng = np.random.default_rng(seed)
    sizes = [width] * (depth + 1) + [classes]
    model = mg.nn.MLP(sizes, rng=rng)
    x = mg.Tensor(rng.standard_normal((batch, width)))
    y = rng.integers(0, classes, size=batch)
    return model, x, y


def deep_mlp_step(model, x, y, checkpoint=None):
    """One step of ``deep_mlp``; with ``checkpoint``, every Linear+ReLU block is recomputed in backward."""
    layers = list(model)
    h = x
    i = 0
    while i < len(layers) - 1:
        block = layers[i:i + 2]  # Linear, ReLU

        def run(t, block=block):
            for layer in block:
                t = layer(t)
            return t

        h = checkpoint(run, h) if checkpoint is not None else run(h)
        i += 2
    loss = layers[-1](h).cross_entropy_with_logits(y)
    loss.backward()
    return loss
