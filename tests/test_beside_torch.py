"""What the docstrings and notebooks say minigrad shares with PyTorch, measured on both.

Each test runs the same small program in minigrad and in PyTorch and compares
what they save for backward, how their version counters move, and which
backward passes they refuse. Without PyTorch the tests skip.
"""

import numpy as np
import pytest

import minigrad as mg
from minigrad import Tensor
from minigrad.ops import batch_norm, layer_norm

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(7)
X = RNG.standard_normal((5, 4))
W = RNG.standard_normal((4, 3))


def _torch_saved_bytes(run, exclude=()):
    """Bytes of the distinct storages PyTorch saves for backward while ``run()`` records.

    Storages of the tensors in ``exclude`` (parameters, buffers) are left out.
    """
    skip = {t.untyped_storage().data_ptr() for t in exclude}
    seen = {}

    def pack(t):
        if t.untyped_storage().data_ptr() not in skip:
            seen[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        run()
    return sum(seen.values())


def _mg_saved_bytes(root, exclude=()):
    """Bytes of the distinct arrays the nodes of ``root``'s graph keep, those of ``exclude`` left out."""
    skip = {id(t.data) for t in exclude}
    seen = {}
    for node in mg.topological_order(root):
        for a in node.arrays():
            if id(a) not in skip:
                seen[id(a)] = a.nbytes
    return sum(seen.values())


def _pair(array, requires_grad=True):
    a = np.asarray(array, dtype=np.float64)
    m = Tensor(a, requires_grad=requires_grad)
    t = torch.tensor(a, requires_grad=requires_grad)
    return m, t


# One op on an activation h = x * 1 (not a leaf, not a parameter): what the op's node keeps.
OPS = {
    "matmul, the weight needs grad": (lambda h, w: h @ w, lambda h, w: h @ w),
    "matmul, only the input needs grad": (lambda h, w: h @ w.detach(), lambda h, w: h @ w.detach()),
    "relu": (lambda h, w: h.relu(), lambda h, w: h.relu()),
    "exp": (lambda h, w: h.exp(), lambda h, w: h.exp()),
    "tanh": (lambda h, w: h.tanh(), lambda h, w: h.tanh()),
    "sigmoid": (lambda h, w: h.sigmoid(), lambda h, w: h.sigmoid()),
    "softmax": (lambda h, w: h.softmax(axis=1), lambda h, w: h.softmax(dim=1)),
    "log_softmax": (lambda h, w: h.log_softmax(axis=1), lambda h, w: h.log_softmax(dim=1)),
    "add": (lambda h, w: h + h, lambda h, w: h + h),
    "layer_norm, no gain": (lambda h, w: layer_norm(h),
                            lambda h, w: torch.nn.functional.layer_norm(h, h.shape[-1:])),
    "batch_norm, no gain": (lambda h, w: batch_norm(h),
                            lambda h, w: torch.nn.functional.batch_norm(h, None, None, training=True)),
}


@pytest.mark.parametrize("name", sorted(OPS))
def test_each_op_keeps_the_bytes_pytorch_keeps(name):
    mg_op, torch_op = OPS[name]
    xm, xt = _pair(X)
    wm, wt = _pair(W)
    hm = xm * 1.0
    mine = mg_op(hm, wm).grad_fn.saved_nbytes()
    ht = xt * 1.0
    theirs = _torch_saved_bytes(lambda: torch_op(ht, wt))
    assert mine == theirs, f"{name}: minigrad keeps {mine} bytes, PyTorch {theirs}"


def test_in_place_mul_by_a_tensor_keeps_a_copy_of_the_old_value_as_pytorch_does():
    xm, xt = _pair(X)
    ym, yt = _pair(X[::-1].copy())
    am = xm + 0.0                       # add keeps nothing, in both
    am.mul_(ym)                         # d/dy needs a's old value, which mul_ overwrites
    mine = _mg_saved_bytes(am)

    def run():
        a = xt + 0.0
        a.mul_(yt)

    theirs = _torch_saved_bytes(run)
    assert mine == theirs == 2 * X.nbytes, (mine, theirs)


def test_version_counters_move_as_pytorchs():
    xm, xt = _pair(X)
    am, at = xm * 1.0, xt * 1.0
    versions = []
    for a in (am, at):
        row = [a._version]
        a += 1.0
        row.append(a._version)
        a *= 2.0
        row.append(a._version)
        a[0] = 5.0
        row.append(a._version)
        a.add_(1.0)
        row.append(a._version)
        versions.append(row)
    assert versions[0] == versions[1], versions

    # a view shares its base's counter, and so does detach() (tensors outside any graph here:
    # in-place through a view of a graph tensor is refused by minigrad, recorded by PyTorch)
    bm, bt = Tensor(X), torch.tensor(X)
    vm, vt = bm[1:3], bt[1:3]
    dm, dt = bm.detach(), bt.detach()
    bm.mul_(3.0)
    bt.mul_(3.0)
    assert (vm._version, dm._version) == (vt._version, dt._version) == (1, 1)
    vm.add_(1.0)
    vt.add_(1.0)
    assert (bm._version, dm._version) == (bt._version, dt._version) == (2, 2)

    # a leaf changed under no_grad, and an optimizer step: one bump per update
    pm, pt = _pair(W)
    with mg.no_grad():
        pm -= 0.1
    with torch.no_grad():
        pt -= 0.1
    assert pm._version == pt._version == 1
    (pm * pm).sum().backward()
    (pt * pt).sum().backward()
    mg.optim.SGD([pm], lr=0.1).step()
    torch.optim.SGD([pt], lr=0.1).step()
    assert pm._version == pt._version == 2


def _raises(fn):
    try:
        fn()
    except RuntimeError:
        return True
    return False


def _saved_changed_under_no_grad(lib, no_grad):
    def run():
        x = (lib.Tensor if lib is mg else torch.tensor)(X, requires_grad=True)
        h = x * 1.0
        y = (h * h).sum()
        with no_grad():
            h.mul_(2.0)
        y.backward()
    return run


def _output_changed(lib, op):
    def run():
        x = (lib.Tensor if lib is mg else torch.tensor)(X, requires_grad=True)
        y = getattr(x * 1.0, op)()
        y.add_(1.0)
        y.sum().backward()
    return run


def _twice(lib):
    def run():
        x = (lib.Tensor if lib is mg else torch.tensor)(X, requires_grad=True)
        y = (x.exp() * 2.0).sum()
        y.backward()
        y.backward()
    return run


def _leaf_in_place(lib):
    def run():
        x = (lib.Tensor if lib is mg else torch.tensor)(X, requires_grad=True)
        x.add_(1.0)
    return run


def _stale_after_step(lib):
    def run():
        if lib is mg:
            w = Tensor(W, requires_grad=True)
            opt = mg.optim.SGD([w], lr=0.1)
        else:
            w = torch.tensor(W, requires_grad=True)
            opt = torch.optim.SGD([w], lr=0.1)
        h = (w * w).sum()                    # this mul saves w itself
        g = (w * 3.0).sum() * h             # and g's graph goes through h
        h.backward(retain_graph=True)
        opt.step()
        g.backward()
    return run


def _add_input_changed(lib, no_grad):
    def run():
        x = (lib.Tensor if lib is mg else torch.tensor)(X, requires_grad=True)
        h = x * 1.0
        y = (h + 1.0).sum()                  # add saves nothing: the change is harmless
        with no_grad():
            h.mul_(2.0)
        y.backward()
    return run


PROGRAMS = {
    "a saved value changed under no_grad": lambda lib, ng: _saved_changed_under_no_grad(lib, ng),
    "relu's output changed in place": lambda lib, ng: _output_changed(lib, "relu"),
    "exp's output changed in place": lambda lib, ng: _output_changed(lib, "exp"),
    "sigmoid's output changed in place": lambda lib, ng: _output_changed(lib, "sigmoid"),
    "a second backward": lambda lib, ng: _twice(lib),
    "an in-place change of a leaf that requires grad": lambda lib, ng: _leaf_in_place(lib),
    "a graph made stale by an optimizer step": lambda lib, ng: _stale_after_step(lib),
    "an input of add changed in place": lambda lib, ng: _add_input_changed(lib, ng),
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_backward_refuses_what_pytorch_refuses(name):
    build = PROGRAMS[name]
    mine = _raises(build(mg, mg.no_grad))
    theirs = _raises(build(torch, torch.no_grad))
    assert mine == theirs, f"{name}: minigrad {'raises' if mine else 'runs'}, PyTorch " \
                           f"{'raises' if theirs else 'runs'}"
    expected = name != "an input of add changed in place"
    assert mine == expected, f"{name}: expected {'an error' if expected else 'no error'}"


@pytest.mark.parametrize("name", ["relu", "exp", "tanh", "sigmoid", "softmax", "log_softmax"])
def test_ops_that_keep_their_output_keep_it_in_both(name):
    mg_op, torch_op = OPS[name]
    xm, xt = _pair(X)
    ym = mg_op(xm * 1.0, None)
    mine = [np.shares_memory(a, ym.data) for a in ym.grad_fn.arrays()]
    saved = []
    with torch.autograd.graph.saved_tensors_hooks(lambda t: saved.append(t) or t, lambda t: t):
        yt = torch_op(xt * 1.0, None)
    theirs = [t.untyped_storage().data_ptr() == yt.untyped_storage().data_ptr() for t in saved]
    assert mine == theirs == [True], (name, mine, theirs)


@pytest.mark.parametrize("name, keys", [("SGD", ("lr", "momentum", "weight_decay")),
                                        ("Adam", ("lr", "betas", "eps", "weight_decay"))])
def test_optimizer_defaults_are_pytorchs(name, keys):
    import inspect

    ours = inspect.signature(getattr(mg.optim, name).__init__).parameters
    theirs = inspect.signature(getattr(torch.optim, name).__init__).parameters
    for key in keys:
        assert ours[key].default == theirs[key].default, (name, key, ours[key].default, theirs[key].default)


# ----------------------------------------------------- where minigrad differs, as documented

def _module_bytes(mg_module, torch_module, exclude_torch):
    """Bytes each framework keeps beyond the parameters, for module(x + 0.0) (add keeps nothing)."""
    xm, xt = _pair(X)
    mine = _mg_saved_bytes(mg_module(xm + 0.0), exclude=mg_module.parameters())
    return mine, _torch_saved_bytes(lambda: torch_module(xt + 0.0), exclude=exclude_torch)


def test_the_normalisation_modules_keep_x_hat_beside_what_pytorch_keeps():
    # the docstrings of nn.LayerNorm and nn.BatchNorm1d: one more array of the input's size
    D = X.shape[1]
    tln = torch.nn.LayerNorm(D, dtype=torch.float64)
    mine, theirs = _module_bytes(mg.nn.LayerNorm(D), tln, list(tln.parameters()))
    assert mine - theirs == X.nbytes, (mine, theirs)
    tbn = torch.nn.BatchNorm1d(D, dtype=torch.float64)
    mine, theirs = _module_bytes(mg.nn.BatchNorm1d(D), tbn, list(tbn.parameters()) + list(tbn.buffers()))
    assert mine - theirs == X.nbytes, (mine, theirs)


def test_clip_grad_norm_where_it_differs_from_pytorch():
    # squares that overflow, gradients that are finite: minigrad clips, PyTorch zeroes them
    pm, pt = _pair([1e200, 1e200])
    pm.grad, pt.grad = np.array([1e200, 1e200]), torch.tensor([1e200, 1e200], dtype=torch.float64)
    mine = mg.nn.clip_grad_norm([pm], 1.0)
    theirs = float(torch.nn.utils.clip_grad_norm_([pt], 1.0))
    assert np.isclose(mine, np.sqrt(2) * 1e200) and np.isclose(np.linalg.norm(pm.grad), 1.0)
    assert np.isinf(theirs) and (pt.grad == 0).all()
    # a non-finite norm with error_if_nonfinite=False: minigrad leaves the gradients, PyTorch does not
    pm, pt = _pair([1.0, 2.0])
    pm.grad, pt.grad = np.array([np.inf, 1.0]), torch.tensor([np.inf, 1.0], dtype=torch.float64)
    assert np.isinf(mg.nn.clip_grad_norm([pm], 1.0, error_if_nonfinite=False))
    assert np.isinf(float(torch.nn.utils.clip_grad_norm_([pt], 1.0, error_if_nonfinite=False)))
    assert pm.grad.tolist() == [np.inf, 1.0] and not torch.isfinite(pt.grad).all()
    with pytest.raises(RuntimeError, match="clip_grad_norm"):
        mg.nn.clip_grad_norm([pm], 1.0)          # minigrad's default refuses


def test_grad_raises_runtime_error_for_a_bad_input_in_both():
    xm, xt = _pair([1.0])
    for bad_m, bad_t in (([1.0], [1.0]), (Tensor([1.0]), torch.tensor([1.0], dtype=torch.float64))):
        with pytest.raises(RuntimeError):
            mg.grad((xm * 2.0).sum(), [bad_m])
        with pytest.raises(RuntimeError):
            torch.autograd.grad((xt * 2.0).sum(), [bad_t])


def test_keep_last_recomputes_up_to_k_minus_2_layers_more_than_pytorch():
    # checkpoint_sequential's docstring: minigrad cuts at i * n // k, PyTorch makes k - 1 segments of n // k
    from torch.utils.checkpoint import checkpoint_sequential as torch_checkpoint_sequential

    n, k = 10, 4
    weights = [np.random.default_rng(i).standard_normal((3, 3)) * 0.5 for i in range(n)]
    calls = {"minigrad": 0, "torch": 0}

    def layer(lib, w):
        def f(h):
            calls[lib] += 1
            return (h @ w).tanh()
        return f

    xm, xt = _pair(X[:2, :3])
    mg.checkpoint_sequential([layer("minigrad", Tensor(w, requires_grad=True)) for w in weights], k, xm,
                             keep_last=True).sum().backward()
    torch_checkpoint_sequential([layer("torch", torch.tensor(w, requires_grad=True)) for w in weights], k, xt,
                                use_reentrant=False).sum().backward()
    assert calls == {"minigrad": n + (k - 1) * n // k, "torch": n + (k - 1) * (n // k)}, calls
