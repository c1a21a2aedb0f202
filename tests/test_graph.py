"""The graph of backward nodes: what it keeps, what it frees, and in-place ops, beside PyTorch."""

import gc
import threading
import weakref

import numpy as np
import pytest

import minigrad as mg
from minigrad import Tensor, nn
from minigrad.function import AccumulateGrad
from minigrad.memory import profile_step


def test_a_tensor_keeps_its_node_not_its_inputs():
    x = Tensor(np.ones((4, 3)))
    w = Tensor(np.ones((3, 2)), requires_grad=True)
    z = x @ w
    ref = weakref.ref(z.data)
    h = z.relu()
    assert h.parents == (z,) and h.grad_fn.parents == (z.grad_fn,)
    assert isinstance(z.grad_fn.parents[1], AccumulateGrad) and z.grad_fn.parents[1].variable is w
    assert z.grad_fn.parents[0] is None                  # x needs no gradient: no edge
    del z
    gc.collect()
    assert ref() is None, "an output that no node saved is freed once no name holds it"
    assert h.parents == () and h.op == "relu"


def test_backward_frees_each_nodes_saved_values_unless_retain_graph():
    w = Tensor(np.ones((3, 3)), requires_grad=True)
    y = (w @ w).tanh().sum()
    nodes = [n for n in mg.topological_order(y) if not isinstance(n, AccumulateGrad)]
    assert any(n.saved for n in nodes)
    seen = []
    with mg.op_hook(lambda ev, fn, i, node, a: ev == "backward" and seen.append(
            [m.released for m in nodes])):
        y.backward()
    # while the pass runs, the nodes already done have let go of their values
    assert seen[1][-1] is True and seen[1][0] is False
    assert all(n.released for n in nodes)
    before = w.grad.copy()
    z = (w * w).sum()
    z.backward(retain_graph=True)
    z.backward()                    # the kept graph runs again: twice d(w*w)/dw = 4w
    np.testing.assert_allclose(w.grad - before, 4 * w.data)


def test_what_matmul_saves_depends_on_who_needs_a_gradient():
    a = Tensor(np.ones((4, 3)))
    b = Tensor(np.ones((3, 2)), requires_grad=True)
    assert [v is a.data for v in (a @ b).grad_fn.saved] == [True, False]
    assert (a @ b).grad_fn.saved[1] is None              # dA is not needed, so B is not kept
    a.requires_grad = True
    assert all(v is not None for v in (a @ b).grad_fn.saved)


MLP_SIZES = [64] + [256] * 5 + [10]


def _mlp_setup():
    mg.random.manual_seed(0)
    model = nn.MLP(MLP_SIZES)
    rng = np.random.default_rng(0)
    x = Tensor(rng.standard_normal((256, 64)))
    y = rng.integers(0, 10, size=256)
    return model, x, y


def _torch_saved_bytes(model):
    """Distinct non-parameter storages PyTorch saves for backward on the same MLP (input excluded)."""
    torch = pytest.importorskip("torch")
    layers = []
    linears = [m for m in model.layers if isinstance(m, nn.Linear)]
    for i, lin in enumerate(linears):
        tl = torch.nn.Linear(lin.weight.shape[0], lin.weight.shape[1], dtype=torch.float64)
        with torch.no_grad():
            tl.weight.copy_(torch.from_numpy(lin.weight.data.T.copy()))
            tl.bias.copy_(torch.from_numpy(lin.bias.data.copy()))
        layers.append(tl)
        if i < len(linears) - 1:
            layers.append(torch.nn.ReLU())
    net = torch.nn.Sequential(*layers)
    params = {p.untyped_storage().data_ptr() for p in net.parameters()}
    _, x, y = _mlp_setup()
    xt = torch.from_numpy(x.data.copy())
    seen = {}

    def pack(t):
        ptr = t.untyped_storage().data_ptr()
        if ptr not in params and ptr != xt.untyped_storage().data_ptr():
            seen[ptr] = t.untyped_storage().nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        loss = torch.nn.functional.cross_entropy(net(xt), torch.from_numpy(y))
    return sum(seen.values()), loss


def test_mlp_holds_what_pytorch_saves_after_forward_and_nothing_after_backward():
    model, x, y = _mlp_setup()
    torch_bytes, _ = _torch_saved_bytes(model)
    tl = profile_step(model, x, y)
    fwd, back = tl.at_end("forward").by_category, tl.at_end("backward").by_category
    held = fwd["saved activations"] + fwd["graph outputs"] - x.data.nbytes  # the input excluded
    assert held <= 1.15 * torch_bytes, (held, torch_bytes)
    # closer still: the same arrays, but for the loss's row index (one int64 per example),
    # which PyTorch's nll_loss does without (it keeps an 8-byte scalar instead)
    assert 0 <= held - torch_bytes <= x.shape[0] * 8, (held, torch_bytes)
    after = back["saved activations"] + back["graph outputs"]             # the loss is still held
    assert after <= 0.02 * torch_bytes, (after, torch_bytes)


def test_the_profiler_counts_arrays_saved_inside_tuples():
    n = 20_000
    rng = np.random.default_rng(0)
    x, w = Tensor(rng.standard_normal((n, 3))), Tensor(rng.standard_normal((3, 4)), requires_grad=True)
    y = rng.integers(0, 4, size=n)
    with mg.memory.MemoryProfiler() as prof:
        with prof.phase("forward"):
            loss = (x @ w).softmax().cross_entropy(y)
    cats = prof.timeline.at_end("forward").by_category
    # the softmax output, x (for dW), the loss's row index (an int64 arange) and the labels,
    # which were made before profiling began, are all saved
    assert cats["saved activations"] == n * 4 * 8 + n * 3 * 8 + n * 8 + n * 8
    assert cats["temporaries"] == 0
    del loss


# --------------------------------------------------------------------- in place

def _torch():
    return pytest.importorskip("torch")


PROGRAMS = {
    "mul_ by a tensor": lambda T, x, y: (lambda a: (a.mul_(y), a)[1])(x * 2),
    "add_ then exp": lambda T, x, y: (lambda a: (a.add_(y), a.exp())[1])(x * 1.0),
    "sub_ and div_": lambda T, x, y: (lambda a: (a.sub_(y), a.div_(y + 3.0), a * a)[2])(x * 1.5),
    "+= and *=": lambda T, x, y: _iops(x * 1.0, y),
    "setitem with a tensor": lambda T, x, y: _setitem(x * 3.0, y),
}


def _iops(a, y):
    a += y
    a *= y
    return a


def _setitem(a, y):
    a[1:3] = y[0:2] * 2.0
    return a.tanh()


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_in_place_programs_give_pytorchs_gradients(name):
    torch = _torch()
    rng = np.random.default_rng(1)
    xv, yv = rng.uniform(0.5, 1.5, 4), rng.uniform(0.5, 1.5, 4)
    x, y = Tensor(xv, requires_grad=True), Tensor(yv, requires_grad=True)
    out = PROGRAMS[name](mg, x, y)
    out.sum().backward()
    xt = torch.tensor(xv, requires_grad=True)
    yt = torch.tensor(yv, requires_grad=True)
    ot = PROGRAMS[name](torch, xt, yt)
    ot.sum().backward()
    np.testing.assert_allclose(out.data, ot.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(x.grad, xt.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(y.grad, yt.grad.numpy(), rtol=1e-12)


def test_in_place_programs_match_numerical_gradients():
    for name, prog in sorted(PROGRAMS.items()):
        rng = np.random.default_rng(2)
        xs = [Tensor(rng.uniform(0.5, 1.5, 4), requires_grad=True) for _ in range(2)]
        assert mg.gradcheck(lambda x, y, prog=prog: prog(mg, x, y).sum(), *xs), name


def test_an_in_place_change_of_a_saved_value_is_caught_as_in_pytorch():
    x = Tensor([1.0, 2.0], requires_grad=True)
    a = x.exp()
    a.add_(1.0)                    # exp saved its output, which is now changed
    with pytest.raises(RuntimeError, match=r"'exp' saved for backward was modified in place: its "
                                           r"output \(shape \(2,\)\) is at version 1"):
        a.sum().backward()
    assert x.grad is None


def test_a_leaf_that_requires_grad_refuses_in_place_outside_no_grad():
    w = Tensor([1.0, 2.0], requires_grad=True)
    for op in (lambda: w.add_(1.0), lambda: w.sub_(1.0), lambda: w.mul_(2.0), lambda: w.div_(2.0),
               lambda: w.__setitem__(0, 5.0)):
        with pytest.raises(RuntimeError, match="a leaf that requires grad"):
            op()
    assert w.data.tolist() == [1.0, 2.0] and w._version == 0


def test_the_pytorch_update_idiom_updates_every_parameter():
    ps = [Tensor(np.ones(3), requires_grad=True), Tensor(np.ones((2, 2)), requires_grad=True)]
    loss = (ps[0] * 2.0).sum() + (ps[1] * 3.0).sum()
    loss.backward()
    with mg.no_grad():
        for p in ps:
            p -= 0.5 * p.grad
    assert ps[0].data.tolist() == [0.0] * 3 and ps[1].data.tolist() == [[-0.5, -0.5]] * 2
    assert all(p._version == 1 and p.is_leaf for p in ps)


def test_a_failed_in_place_write_changes_nothing():
    b = Tensor([1.0, 2.0, 3.0])
    with pytest.raises(TypeError, match="__setitem__"):
        b[:] = [5.0, 5.0, "a"]
    with pytest.raises(ValueError, match=r"add_: the operand of shape \(2,\)"):
        b.add_(np.ones(2))
    with pytest.raises(IndexError, match="__setitem__: cannot set index 7"):
        b[7] = 1.0
    assert b.data.tolist() == [1.0, 2.0, 3.0] and b._version == 0


def test_in_place_through_a_view_of_a_graph_tensor_raises_a_clear_error():
    x = Tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    a = x * 2.0
    for make in (lambda t: t[0:2], lambda t: t.reshape(2, 2), lambda t: t.reshape(2, 2).T):
        v = make(a)
        with pytest.raises(RuntimeError, match="is a view made by"):
            v.mul_(3.0)
    b = a[0:2]
    a.mul_(3.0)                     # the base changes after the view was made
    with pytest.raises(RuntimeError, match="view made by 'getitem' whose base was changed in place"):
        b.sum()


def test_in_place_on_a_constant_with_a_graph_operand_joins_the_graph():
    y = Tensor([1.0, 2.0], requires_grad=True)
    a = Tensor([0.0, 0.0])
    a.add_(y * 3.0)
    assert a.requires_grad and a.op == "add"
    a.sum().backward()
    assert y.grad.tolist() == [3.0, 3.0]


# ------------------------------------------------------------- reliability

def test_an_error_inside_backward_says_truthfully_why_a_retry_fails():
    w = Tensor([1.0, 2.0], requires_grad=True)
    with np.errstate(all="ignore"):
        y = (w * 0.0).log().sum()   # log(0) = -inf; its backward divides by zero
        w.grad = np.zeros(2)
        with pytest.raises(mg.AnomalyError), mg.detect_anomaly():
            y.backward()
    assert w.grad.tolist() == [0.0, 0.0], "no .grad changes when backward fails"
    with pytest.raises(RuntimeError, match="stopped with an error .*AnomalyError"):
        y.backward()


def test_gradient_accumulation_is_all_or_nothing():
    a = Tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = Tensor([1.0, 2.0, 3.0], requires_grad=True)
    a.grad = np.ones(3)
    b.grad = np.ones((3, 1))        # a wrong shape: would broadcast to (3, 3)
    loss = (a * b).sum()
    with pytest.raises(RuntimeError, match=r"existing .grad of a tensor of shape \(3,\) has shape \(3, 1\)"):
        loss.backward()
    assert a.grad.tolist() == [1.0, 1.0, 1.0] and b.grad.shape == (3, 1)


def test_a_leafs_grad_has_the_leafs_dtype_and_shape():
    w = Tensor([1.0, 2.0], requires_grad=True, dtype=np.float32)
    (w * Tensor([3.0, 4.0])).sum().backward()
    assert w.grad.dtype == np.float32
    s = Tensor(2.0, requires_grad=True)
    (s * s).backward()
    assert isinstance(s.grad, np.ndarray) and s.grad.shape == () and s.grad == 4.0


def test_a_string_grad_gets_a_clear_error():
    y = Tensor([1.0], requires_grad=True) * 2.0
    with pytest.raises(TypeError, match="backward: grad must hold real numbers"):
        y.backward(np.array(["a"]))


def test_grad_mode_is_per_thread():
    inside, go, done = threading.Event(), threading.Event(), threading.Event()

    def other():
        with mg.no_grad():
            inside.set()
            go.wait(5)
        done.set()

    t = threading.Thread(target=other)
    t.start()
    inside.wait(5)
    assert mg.is_grad_enabled(), "no_grad in another thread must not switch this one off"
    assert (Tensor([1.0], requires_grad=True) * 2.0).requires_grad
    go.set()
    t.join(5)
    assert done.is_set()


def test_a_numpy_operand_changed_after_the_op_cannot_change_the_gradient():
    X = np.full((2, 2), 1.0)
    W = Tensor(np.ones((2, 2)), requires_grad=True)
    y = (X @ W).sum()
    X[:] = 0.0
    y.backward()
    assert W.grad.tolist() == [[2.0, 2.0], [2.0, 2.0]]


# --------------------------------------------------------------- the package

def test_no_function_hides_a_module():
    import importlib

    for name in ("checkpointing", "planner", "tracing", "jacobians", "hessians"):
        importlib.import_module(f"minigrad.{name}")
    assert mg.planner.plan_segments is mg.plan_segments
    assert callable(mg.checkpoint) and callable(mg.trace) and callable(mg.jacobian)


def test_no_module_outside_viz_imports_viz():
    import pathlib
    import re

    root = pathlib.Path(mg.__file__).parent
    for path in root.glob("*.py"):
        text = path.read_text()
        assert not re.search(r"^\s*(from \.viz|from minigrad\.viz|import minigrad\.viz)", text, re.M), path


def test_the_readings_example_trains_as_numpy_does():
    """The course's two-layer example (matmul, relu, softmax, cross-entropy; ``w.data -= lr * w.grad``),
    written as a learner of notebook 00 would, against the same steps written out in NumPy."""
    np.random.seed(0)
    X = np.array([[1.0, 2.0, 1.0], [2.0, 0.0, 1.0], [0.0, 1.0, 2.0]])
    Y = np.array([0, 1, 1])
    w1 = Tensor(np.random.randn(3, 4) * 0.1, requires_grad=True)
    w2 = Tensor(np.random.randn(4, 2) * 0.1, requires_grad=True)
    W1v, W2v = w1.data.copy(), w2.data.copy()
    x, lr, rows = Tensor(X), 0.5, np.arange(3)
    for _ in range(50):
        for p in (w1, w2):
            p.zero_grad()
        loss = ((x @ w1).relu() @ w2).softmax(axis=1).cross_entropy(Y)
        loss.backward()
        w1.data -= lr * w1.grad
        w2.data -= lr * w2.grad
        z = X @ W1v
        h = np.maximum(z, 0)
        s = h @ W2v
        e = np.exp(s - s.max(axis=1, keepdims=True))
        p = e / e.sum(axis=1, keepdims=True)
        ref = -np.log(np.clip(p[rows, Y], 1e-12, 1)).mean()
        ds = p.copy()
        ds[rows, Y] -= 1
        ds /= 3
        dW1 = X.T @ ((ds @ W2v.T) * (z > 0))
        W2v -= lr * (h.T @ ds)
        W1v -= lr * dW1
        assert abs(loss.item() - ref) < 1e-12
    np.testing.assert_allclose(w1.data, W1v, atol=1e-12)
    np.testing.assert_allclose(w2.data, W2v, atol=1e-12)


def test_a_hook_that_raises_leaves_every_grad_as_it_was_and_a_truthful_retry_error():
    w = Tensor([1.0, 2.0], requires_grad=True)
    y = (w * w).tanh().sum()

    def bad(event, fn, *rest):
        if event == "backward" and fn.name == "tanh":
            raise KeyError("the hook broke")

    with pytest.raises(KeyError), mg.op_hook(bad):
        y.backward()
    assert w.grad is None
    with pytest.raises(RuntimeError, match="stopped with an error .*KeyError"):
        y.backward()


def test_checkpoint_sequential_names_a_layer_that_returns_a_tuple():
    layers = [lambda t: t * 2.0, lambda t: (t, t)]
    with pytest.raises(TypeError, match="checkpoint_sequential: a layer returned a tuple"):
        mg.checkpoint_sequential(layers, 1, Tensor([1.0], requires_grad=True))


def test_the_fused_loss_keeps_what_pytorchs_cross_entropy_keeps():
    # Both keep the log-probabilities (PyTorch: log_softmax's output) and the targets;
    # minigrad keeps a row index too. Neither keeps the logits or the probabilities.
    torch = pytest.importorskip("torch")
    r = np.random.default_rng(21)
    z0, y = r.standard_normal((6, 4)), np.array([0, 3, 1, 1, 2, 0])
    zt = torch.tensor(z0, requires_grad=True)
    kept = []
    with torch.autograd.graph.saved_tensors_hooks(lambda t: kept.append(t) or t, lambda t: t):
        loss_t = torch.nn.functional.cross_entropy(zt, torch.from_numpy(y))
    # log_softmax's node and nll_loss's node both save the log-probabilities: one storage
    storages = {t.untyped_storage().data_ptr(): t for t in kept if tuple(t.shape) == z0.shape}
    big = [t.detach().numpy() for t in storages.values()]
    assert len(big) == 1 and zt.untyped_storage().data_ptr() not in storages
    z = Tensor(z0, requires_grad=True)
    loss = z.cross_entropy_with_logits(y)
    node = loss.grad_fn
    arrays = node.arrays()
    assert [a.shape for a in arrays] == [(6, 4), (6,), (6,)]
    np.testing.assert_allclose(arrays[0], big[0], atol=1e-15)   # the same log-probabilities
    assert not any(a is z.data for a in arrays)                 # not the logits
    assert node.saved_nbytes() == big[0].nbytes + 2 * 6 * 8
    assert abs(loss.item() - loss_t.item()) < 1e-15
