"""minigrad.optim: updates checked against values worked out by hand, state sizes, errors."""

import math

import numpy as np
import pytest
from conftest import needs_torch, torch

from minigrad import Tensor, nn, optim


def quadratic_step(opt, w):
    """One step on f(w) = 1/2 ||w||^2, whose gradient is w itself."""
    opt.zero_grad()
    (0.5 * (w * w).sum()).backward()
    opt.step()


# ---------------------------------------------------------------------- SGD

def test_plain_sgd_step():
    w = Tensor([1.0, -2.0], requires_grad=True)
    opt = optim.SGD([w], lr=0.1)
    quadratic_step(opt, w)
    np.testing.assert_allclose(w.data, [0.9, -1.8], rtol=0, atol=1e-15)   # w - 0.1 * w
    quadratic_step(opt, w)
    np.testing.assert_allclose(w.data, [0.81, -1.62], rtol=0, atol=1e-15)
    assert opt.state == {} and opt.state_nbytes() == 0


def test_sgd_with_momentum_by_hand():
    # v1 = g1 = w0 = [1, -2]                    w1 = w0 - 0.1 v1 = [0.9, -1.8]
    # v2 = 0.9 v1 + w1 = [1.8, -3.6]            w2 = w1 - 0.1 v2 = [0.72, -1.44]
    # v3 = 0.9 v2 + w2 = [2.34, -4.68]          w3 = w2 - 0.1 v3 = [0.486, -0.972]
    w = Tensor([1.0, -2.0], requires_grad=True)
    opt = optim.SGD([w], lr=0.1, momentum=0.9)
    expected = [[0.9, -1.8], [0.72, -1.44], [0.486, -0.972]]
    for want in expected:
        quadratic_step(opt, w)
        np.testing.assert_allclose(w.data, want, rtol=0, atol=1e-14)
    np.testing.assert_allclose(opt.state[0]["momentum"], [2.34, -4.68], rtol=0, atol=1e-14)


def test_sgd_momentum_on_a_constant_gradient_is_a_geometric_series():
    # grad = c every step: v_t = c (1 - mu^t) / (1 - mu), so w_T = w_0 - lr c sum_t v_t / c.
    c = np.array([0.5, -1.0, 2.0])
    w = Tensor(np.zeros(3), requires_grad=True)
    lr, mu, steps = 0.01, 0.8, 25
    opt = optim.SGD([w], lr=lr, momentum=mu)
    for _ in range(steps):
        opt.zero_grad()
        (w * c).sum().backward()
        opt.step()
    total = sum((1 - mu ** t) / (1 - mu) for t in range(1, steps + 1))
    np.testing.assert_allclose(w.data, -lr * c * total, rtol=1e-12)


def test_sgd_weight_decay_adds_decay_times_p_to_the_gradient():
    w = Tensor([1.0, -2.0], requires_grad=True)
    opt = optim.SGD([w], lr=0.1, weight_decay=0.5)
    quadratic_step(opt, w)          # g = w + 0.5 w = 1.5 w  ->  w (1 - 0.15)
    np.testing.assert_allclose(w.data, [0.85, -1.7], rtol=0, atol=1e-15)


# --------------------------------------------------------------------- Adam

def adam_by_hand(w0, lr, b1, b2, eps, steps):
    """Adam on f(w) = 1/2 w^2 for one number, written out without arrays."""
    w, m, v, out = w0, 0.0, 0.0, []
    for t in range(1, steps + 1):
        g = w
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        m_hat = m / (1 - b1 ** t)
        v_hat = v / (1 - b2 ** t)
        w = w - lr * m_hat / (math.sqrt(v_hat) + eps)
        out.append(w)
    return out


def test_adams_first_step_moves_every_weight_by_lr():
    # m_hat = g and v_hat = g^2 after one step, so the update is lr * g / (|g| + eps) ~ lr sign(g),
    # whatever the size of g.
    w = Tensor([1.0, -2.0, 0.5, 300.0], requires_grad=True)
    opt = optim.Adam([w], lr=0.1)
    quadratic_step(opt, w)
    np.testing.assert_allclose(w.data, [0.9, -1.9, 0.4, 299.9], rtol=0, atol=1e-8)


def test_adams_second_step_matches_the_closed_form():
    # t = 2, g1 = w0, g2 = w1:  m_hat = (b1 (1-b1) g1 + (1-b1) g2) / (1 - b1^2),
    #                           v_hat = (b2 (1-b2) g1^2 + (1-b2) g2^2) / (1 - b2^2).
    b1, b2, lr = 0.9, 0.999, 0.1
    g1 = 1.0                                  # w0
    g2 = g1 - lr * g1 / (abs(g1) + 1e-8)      # w1 = 0.9 (up to eps)
    m_hat = (b1 * (1 - b1) * g1 + (1 - b1) * g2) / (1 - b1 ** 2)     # 0.18 / 0.19
    v_hat = (b2 * (1 - b2) * g1 ** 2 + (1 - b2) * g2 ** 2) / (1 - b2 ** 2)
    w2 = g2 - lr * m_hat / (math.sqrt(v_hat) + 1e-8)
    assert abs(w2 - 0.800412) < 1e-6  # the number worked out on paper
    w = Tensor([1.0], requires_grad=True)
    opt = optim.Adam([w], lr=lr, betas=(b1, b2))
    quadratic_step(opt, w)
    quadratic_step(opt, w)
    assert abs(w.data[0] - w2) < 1e-14


@pytest.mark.parametrize("w0, lr, betas", [(1.0, 0.1, (0.9, 0.999)), (-3.0, 0.05, (0.5, 0.9)),
                                           (0.2, 0.01, (0.0, 0.99))])
def test_adam_follows_the_scalar_recursion_for_many_steps(w0, lr, betas):
    want = adam_by_hand(w0, lr, *betas, eps=1e-8, steps=40)
    w = Tensor([w0], requires_grad=True)
    opt = optim.Adam([w], lr=lr, betas=betas)
    got = []
    for _ in range(40):
        quadratic_step(opt, w)
        got.append(w.data[0])
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)


def test_adam_bias_correction_counts_each_parameters_own_steps():
    a = Tensor([1.0], requires_grad=True)
    b = Tensor([5.0], requires_grad=True)
    opt = optim.Adam([a, b], lr=0.1)
    for _ in range(3):                   # b has no gradient yet: skipped
        opt.zero_grad()
        (a * a).sum().backward()
        opt.step()
    opt.zero_grad()
    (b * b).sum().backward()
    opt.step()                           # b's first step: a move of exactly lr
    assert abs(b.data[0] - 4.9) < 1e-8
    assert opt.state[1]["step"] == 1 and opt.state[0]["step"] == 3 and opt.t == 4


def test_adam_weight_decay_is_added_to_the_gradient():
    w = Tensor([2.0], requires_grad=True)
    opt = optim.Adam([w], lr=0.1, weight_decay=0.1)
    opt.zero_grad()
    (w * 0.0).sum().backward()           # zero loss gradient: only the decay pushes
    opt.step()
    assert abs(w.data[0] - 1.9) < 1e-8


@needs_torch
@pytest.mark.parametrize("name", ["sgd", "momentum", "adam"])
def test_optimizers_match_pytorch(name):
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((16, 5)), rng.integers(0, 3, 16)
    model = nn.MLP([5, 8, 3], rng=rng)
    tparams = [torch.tensor(p.data.copy(), requires_grad=True) for p in model.parameters()]
    kw = dict(lr=0.05, weight_decay=0.01)
    if name == "sgd":
        ours, theirs = optim.SGD(model.parameters(), **kw), torch.optim.SGD(tparams, **kw)
    elif name == "momentum":
        ours = optim.SGD(model.parameters(), momentum=0.9, **kw)
        theirs = torch.optim.SGD(tparams, momentum=0.9, **kw)
    else:
        ours = optim.Adam(model.parameters(), betas=(0.8, 0.99), **kw)
        theirs = torch.optim.Adam(tparams, betas=(0.8, 0.99), **kw)
    for _ in range(10):
        ours.zero_grad()
        model(Tensor(x)).cross_entropy_with_logits(y).backward()
        ours.step()
        theirs.zero_grad()
        h = torch.relu(torch.tensor(x) @ tparams[0] + tparams[1])
        torch.nn.functional.cross_entropy(h @ tparams[2] + tparams[3], torch.tensor(y)).backward()
        theirs.step()
    for p, t in zip(model.parameters(), tparams):
        np.testing.assert_allclose(p.data, t.detach().numpy(), rtol=1e-9, atol=1e-12)


# ---------------------------------------------------------------- the state

def test_state_bytes_momentum_once_adam_twice_the_parameters():
    model = nn.MLP([10, 20, 5], rng=0)
    param_bytes = sum(p.data.nbytes for p in model.parameters())
    x, y = Tensor(np.ones((4, 10))), np.array([0, 1, 2, 3])
    sizes = {}
    for name, opt in [("sgd", optim.SGD(model.parameters(), lr=0.01)),
                      ("momentum", optim.SGD(model.parameters(), lr=0.01, momentum=0.9)),
                      ("adam", optim.Adam(model.parameters()))]:
        assert opt.state_nbytes() == 0   # buffers appear at the first step
        opt.zero_grad()
        model(x).cross_entropy_with_logits(y).backward()
        opt.step()
        sizes[name] = opt.state_nbytes()
    assert sizes == {"sgd": 0, "momentum": param_bytes, "adam": 2 * param_bytes}


def test_step_bumps_the_version_so_stale_graphs_fail():
    w = Tensor([1.0, 2.0], requires_grad=True)
    opt = optim.SGD([w], lr=0.1)
    loss = (w * w).sum()                  # saves w for backward
    loss.backward(retain_graph=True)
    v = w._version
    opt.step()
    assert w._version == v + 1
    with pytest.raises(RuntimeError, match="version"):
        loss.backward()


def test_step_skips_parameters_without_a_gradient():
    a = Tensor([1.0], requires_grad=True)
    b = Tensor([1.0], requires_grad=True)
    opt = optim.SGD([a, b], lr=0.5, momentum=0.9)
    (a * 2.0).sum().backward()
    opt.step()
    assert a.data[0] == 0.0 and b.data[0] == 1.0 and 1 not in opt.state


def test_zero_grad_sets_none():
    w = Tensor([1.0], requires_grad=True)
    opt = optim.SGD([w], lr=0.1)
    (w * 3.0).sum().backward()
    opt.zero_grad()
    assert w.grad is None


# ------------------------------------------------------------------- errors

@pytest.mark.parametrize("make", [
    lambda a, b: optim.SGD([a, b], lr=0.1, momentum=0.9),
    lambda a, b: optim.Adam([a, b], lr=0.1),
])
def test_a_bad_gradient_changes_nothing(make):
    a = Tensor([1.0, 2.0], requires_grad=True)
    b = Tensor([3.0, 4.0], requires_grad=True)
    opt = make(a, b)
    a.grad, b.grad = np.ones(2), np.ones(2)
    opt.step()
    before = (a.data.copy(), b.data.copy(), {i: {k: np.copy(v) for k, v in s.items()}
                                              for i, s in opt.state.items()}, opt.steps)
    a.grad, b.grad = np.ones(2), np.ones(3)          # b's is the wrong shape
    with pytest.raises(ValueError, match=r"step: parameter 1 has shape \(2,\) but its grad has "
                                         r"shape \(3,\)"):
        opt.step()
    np.testing.assert_array_equal(a.data, before[0])  # a came first and was not touched
    np.testing.assert_array_equal(b.data, before[1])
    for i, s in opt.state.items():
        for k, v in s.items():
            np.testing.assert_array_equal(v, before[2][i][k])
    assert opt.steps == before[3]


@pytest.mark.parametrize("make, err, msg", [
    (lambda w: optim.SGD([], lr=0.1), ValueError, "SGD: got no parameters"),
    (lambda w: optim.SGD([np.ones(2)], lr=0.1), ValueError, "parameter 0 is not a Tensor"),
    (lambda w: optim.SGD([Tensor([1.0])], lr=0.1), ValueError, "requires_grad=True"),
    (lambda w: optim.Adam([w, w]), ValueError, "parameter 1 is the same Tensor as parameter 0"),
    (lambda w: optim.SGD([w], lr=0.0), ValueError, "SGD: lr must be positive, got 0.0"),
    (lambda w: optim.SGD([w], lr=-0.1), ValueError, "SGD: lr must be in"),
    (lambda w: optim.SGD([w], lr=float("nan")), ValueError, "SGD: lr must be in"),
    (lambda w: optim.SGD([w], lr=float("inf")), ValueError, "SGD: lr must be in"),
    (lambda w: optim.SGD([w], lr="fast"), TypeError, "SGD: lr must be a number"),
    (lambda w: optim.SGD([w], lr=0.1, momentum=-0.5), ValueError, "SGD: momentum must be in"),
    (lambda w: optim.SGD([w], lr=0.1, momentum=1.0), ValueError, "SGD: momentum must be in"),
    (lambda w: optim.SGD([w], lr=0.1, weight_decay=-1), ValueError, "SGD: weight_decay must be in"),
    (lambda w: optim.Adam([w], betas=(1.0, 0.999)), ValueError, r"Adam: betas\[0\] must be in"),
    (lambda w: optim.Adam([w], betas=(0.9, -0.1)), ValueError, r"Adam: betas\[1\] must be in"),
    (lambda w: optim.Adam([w], betas=0.9), ValueError, "Adam: betas must be a pair"),
    (lambda w: optim.Adam([w], eps=-1e-8), ValueError, "Adam: eps must be in"),
])
def test_bad_arguments(make, err, msg):
    with pytest.raises(err, match=msg):
        make(Tensor([1.0], requires_grad=True))


# ----------------------------------------------- all parameters or none

def _snapshot(opt):
    """Every byte the optimizer may change: parameters, grads, buffers, step counts."""
    def grad(g):
        return repr(g) if not isinstance(g, np.ndarray) else (g.dtype, g.shape, g.tobytes())

    return ([(p.data.dtype, p.data.tobytes(), p.data.flags.writeable, grad(p.grad)) for p in opt.params],
            {i: {k: (v.tobytes() if isinstance(v, np.ndarray) else v) for k, v in s.items()}
             for i, s in opt.state.items()},
            opt.steps)


def _nan(p):
    p.grad[1] = np.nan


def _inf(p):
    p.grad[0] = -np.inf


def _complex(p):
    p.grad = p.grad + 1j


def _read_only(p):
    p.data.flags.writeable = False


def _not_an_array(p):
    p.grad = p.grad.tolist()


@pytest.mark.parametrize("make", [
    lambda ps: optim.SGD(ps, lr=0.1, check_finite=True),
    lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9, weight_decay=0.01, check_finite=True),
    lambda ps: optim.Adam(ps, lr=0.1, weight_decay=0.01, check_finite=True),
], ids=["sgd", "momentum", "adam"])
@pytest.mark.parametrize("spoil, err, msg", [
    (_nan, ValueError, r"step: parameter 2 \(shape \(3,\)\) has a grad with 1 NaN and 0 inf"),
    (_inf, ValueError, r"step: parameter 2 \(shape \(3,\)\) has a grad with 0 NaN and 1 inf"),
    (_complex, ValueError, r"step: parameter 2 \(shape \(3,\)\) has a grad of dtype complex128; "
                           r"a gradient must be real"),
    (_read_only, ValueError, r"step: parameter 2 \(shape \(3,\)\) has read-only data"),
    (_not_an_array, TypeError, r"step: parameter 2 \(shape \(3,\)\) has a grad of type list"),
], ids=["nan", "inf", "complex", "read-only", "list"])
def test_a_bad_parameter_anywhere_leaves_everything_bit_for_bit(make, spoil, err, msg):
    ps = [Tensor([1.0, 2.0], requires_grad=True), Tensor([[0.5]], requires_grad=True),
          Tensor([3.0, -1.0, 0.25], requires_grad=True)]
    opt = make(ps)
    for p in ps:
        p.grad = np.full(p.shape, 0.5)
    opt.step()                                   # buffers exist now
    for p in ps:
        p.grad = np.full(p.shape, 0.25)
    spoil(ps[2])                                 # the last one: the others come first
    before = _snapshot(opt)
    with pytest.raises(err, match=msg):
        opt.step()
    assert _snapshot(opt) == before


def test_a_good_step_after_a_refused_one_is_the_same_as_without_it():
    a = Tensor([1.0, 2.0], requires_grad=True)
    b = Tensor([1.0, 2.0], requires_grad=True)
    oa, ob = optim.Adam([a], lr=0.1, check_finite=True), optim.Adam([b], lr=0.1)
    a.grad = np.array([np.nan, 1.0])
    with pytest.raises(ValueError):
        oa.step()
    a.grad = b.grad = np.array([0.5, 1.0])
    oa.step()
    ob.step()
    assert a.data.tobytes() == b.data.tobytes() and oa.state[0]["step"] == 1 and oa.steps == 1


@pytest.mark.parametrize("make, err, msg", [
    (lambda w: optim.SGD([w], lr="0.1"), TypeError, r"SGD: lr must be a number, got str '0.1'"),
    (lambda w: optim.Adam([w], lr=True), TypeError, r"Adam: lr must be a number, got bool"),
    (lambda w: optim.SGD([w], lr=0.1, momentum="0.9"), TypeError, r"SGD: momentum must be a number"),
    (lambda w: optim.Adam([w], betas=("0.9", 0.999)), TypeError, r"Adam: betas\[0\] must be a number"),
    (lambda w: optim.SGD([w * 2], lr=0.1), ValueError,
     r"SGD: can't optimize a non-leaf Tensor: parameter 0 \(shape \(2,\)\) was computed by 'mul'"),
    (lambda w: optim.SGD([w, w[:1]], lr=0.1), ValueError,
     r"SGD: can't optimize a non-leaf Tensor: parameter 1"),
])
def test_bad_constructor_arguments(make, err, msg):
    with pytest.raises(err, match=msg):
        make(Tensor([1.0, 2.0], requires_grad=True))


def test_parameters_sharing_memory_are_refused():
    base = np.arange(6.0)
    a = Tensor(base, requires_grad=True)
    b = a.detach()[2:4].requires_grad_()         # a leaf whose data is a view of a's
    c = Tensor(np.ones(2), requires_grad=True)
    with pytest.raises(ValueError, match=r"Adam: parameters 0 \(shape \(6,\)\) and 2 \(shape \(2,\)\) "
                                         r"share memory"):
        optim.Adam([a, c, b])
    optim.Adam([a, c])                           # separate buffers are fine


def test_a_nan_gradient_is_applied_by_default_as_in_pytorch():
    w = Tensor([1.0, 2.0], requires_grad=True)
    opt = optim.SGD([w], lr=0.1)
    w.grad = np.array([np.nan, 1.0])
    opt.step()
    assert np.isnan(w.data[0]) and w.data[1] == 1.9 and opt.steps == 1


# ------------------------------------------- in place, without temporaries

import tracemalloc  # noqa: E402

BIG = (784, 128)    # the first layer of a digits MLP: 802,816 bytes of float64

MAKERS = {
    "sgd": lambda ps: optim.SGD(ps, lr=0.1),
    "sgd-decay": lambda ps: optim.SGD(ps, lr=0.1, weight_decay=0.01),
    "momentum": lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9, weight_decay=0.01),
    "nesterov": lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9, weight_decay=0.01, nesterov=True),
    "adam": lambda ps: optim.Adam(ps, lr=0.01, weight_decay=0.01),
}


def _peak_extra(fn) -> int:
    """Bytes allocated at the peak of fn() beyond what was allocated before it (tracemalloc)."""
    was_tracing = tracemalloc.is_tracing()
    if not was_tracing:
        tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        before = tracemalloc.get_traced_memory()[0]
        fn()
        return tracemalloc.get_traced_memory()[1] - before
    finally:
        if not was_tracing:
            tracemalloc.stop()


@pytest.mark.parametrize("name, bound", [("sgd", 0.25), ("sgd-decay", 0.25), ("momentum", 0.25),
                                         ("nesterov", 0.25), ("adam", 0.5)])
def test_a_step_makes_no_temporary_of_the_parameters_size(name, bound):
    # PyTorch's p.add_(g, alpha=-lr) makes no temporary; a step here did (1.0x the parameter's
    # bytes for SGD, 4.0x for Adam). Now: SGD none at all, Adam less than its one allowed
    # denominator; only blocks of 64 KiB.
    rng = np.random.default_rng(0)
    w = Tensor(rng.standard_normal(BIG), requires_grad=True)
    w.grad = rng.standard_normal(BIG)
    opt = MAKERS[name]([w])
    size = w.data.nbytes
    first = _peak_extra(opt.step)                    # the buffers are made here
    assert first <= opt.state_nbytes() + bound * size, (name, first / size)
    steady = _peak_extra(opt.step)
    assert steady <= bound * size, (name, steady / size)


@pytest.mark.parametrize("name", list(MAKERS))
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "float32"])
def test_blockwise_updates_equal_the_whole_array_formula_bit_for_bit(name, layout):
    # a parameter larger than one block is updated block by block; the numbers must not change
    rng = np.random.default_rng(1)
    data = rng.standard_normal(BIG)
    if layout == "transposed":
        data = np.ascontiguousarray(data.T).T      # a Fortran-ordered parameter: non-contiguous rows
    w = Tensor(data, requires_grad=True, dtype=np.float32 if layout == "float32" else None)
    if layout == "transposed":
        w.data = data.copy(order="F")
    ref, m, v = w.data.copy(), 0.0, 0.0
    opt = MAKERS[name]([w])
    for t in range(1, 4):
        g = rng.standard_normal(BIG).astype(w.dtype)
        w.grad = g
        opt.step()
        if name == "adam":
            g = g + 0.01 * ref
            m = 0.9 * m + (1 - 0.9) * g
            v = 0.999 * v + (1 - 0.999) * g * g
            ref = ref - 0.01 * (m / (1 - 0.9 ** t)) / (np.sqrt(v / (1 - 0.999 ** t)) + 1e-8)
        elif name in ("momentum", "nesterov"):
            g = g + 0.01 * ref
            m = g if t == 1 else 0.9 * m + g
            ref = ref - 0.1 * ((g + 0.9 * m) if name == "nesterov" else m)
        else:
            ref = ref - 0.1 * ((g + 0.01 * ref) if name == "sgd-decay" else g)
        ref = ref.astype(w.dtype)
        np.testing.assert_array_equal(w.data, ref, err_msg=f"{name}, {layout}, step {t}")
    assert w.data.flags.f_contiguous == (layout == "transposed")   # updated where it lives


@needs_torch
@pytest.mark.parametrize("name", list(MAKERS))
def test_large_parameter_updates_match_torch_optim(name):
    rng = np.random.default_rng(2)
    w = Tensor(rng.standard_normal(BIG), requires_grad=True)
    tw = torch.tensor(w.data.copy(), requires_grad=True)
    opt = MAKERS[name]([w])
    kw = {"sgd": dict(lr=0.1), "sgd-decay": dict(lr=0.1, weight_decay=0.01),
          "momentum": dict(lr=0.1, momentum=0.9, weight_decay=0.01),
          "nesterov": dict(lr=0.1, momentum=0.9, weight_decay=0.01, nesterov=True),
          "adam": dict(lr=0.01, weight_decay=0.01)}[name]
    theirs = (torch.optim.Adam if name == "adam" else torch.optim.SGD)([tw], **kw)
    for _ in range(6):
        g = rng.standard_normal(BIG)
        w.grad, tw.grad = g, torch.tensor(g)
        opt.step()
        theirs.step()
    np.testing.assert_allclose(w.data, tw.detach().numpy(), rtol=1e-9, atol=1e-12)


def test_nesterov_needs_momentum():
    with pytest.raises(ValueError, match="SGD: Nesterov momentum needs a momentum > 0"):
        optim.SGD([Tensor([1.0], requires_grad=True)], lr=0.1, nesterov=True)


# ------------------------------------- a state that does not fit: nothing moves

def _two_step_setup(make):
    ps = [Tensor([1.0, 2.0], requires_grad=True), Tensor([3.0, -1.0, 0.5], requires_grad=True, name="w")]
    opt = make(ps)
    for p in ps:
        p.grad = np.full(p.shape, 0.5)
    opt.step()
    for p in ps:
        p.grad = np.full(p.shape, 0.25)
    return ps, opt


def _drop_v(ps, opt):
    del opt.state[1]["v"]


def _drop_m(ps, opt):
    del opt.state[1]["m"]


def _reshape_m(ps, opt):
    opt.state[1]["m"] = np.zeros(4)


def _replace_data(ps, opt):   # p.data replaced by one of another shape, its grad to match
    ps[1].data = np.ones(5)
    ps[1].grad = np.ones(5)


def _int_step(ps, opt):
    opt.state[1]["step"] = "3"


@pytest.mark.parametrize("make, spoil, err, msg", [
    (MAKERS["adam"], _drop_v, KeyError, r"Adam.step: the state of parameter 1 \('w'\) has no 'v'"),
    (MAKERS["adam"], _drop_m, KeyError, r"Adam.step: the state of parameter 1 \('w'\) has no 'm'"),
    (MAKERS["adam"], _reshape_m, RuntimeError,
     r"Adam.step: parameter 1 \('w'\) has shape \(3,\) but its state 'm' has shape \(4,\)"),
    (MAKERS["adam"], _replace_data, RuntimeError,
     r"Adam.step: parameter 1 \('w'\) has shape \(5,\) but its state 'm' has shape \(3,\)"),
    (MAKERS["adam"], _int_step, TypeError, r"the state 'step' of parameter 1 \('w'\) must be an integer"),
    (MAKERS["momentum"], _replace_data, RuntimeError,
     r"SGD.step: parameter 1 \('w'\) has shape \(5,\) but its state 'momentum' has shape \(3,\)"),
], ids=["adam-no-v", "adam-no-m", "adam-m-shape", "adam-data-replaced", "adam-step-str",
        "momentum-data-replaced"])
def test_a_state_that_does_not_fit_changes_nothing(make, spoil, err, msg):
    ps, opt = _two_step_setup(make)
    spoil(ps, opt)
    before = _snapshot(opt)
    with pytest.raises(err, match=msg):
        opt.step()
    assert _snapshot(opt) == before          # parameter 0 came first and did not move; steps kept
    assert opt.steps == 1


@pytest.mark.parametrize("make, attr, value, err, msg", [
    (MAKERS["adam"], "lr", "0.01", TypeError, r"Adam: lr must be a number, got str '0.01'"),
    (MAKERS["momentum"], "lr", "0.01", TypeError, r"SGD: lr must be a number, got str '0.01'"),
    (MAKERS["momentum"], "lr", -1.0, ValueError, r"SGD: lr must be in"),
    (MAKERS["momentum"], "momentum", None, TypeError, r"SGD: momentum must be a number"),
    (MAKERS["adam"], "b1", 1.5, ValueError, r"Adam: betas\[0\] must be in"),
    (MAKERS["adam"], "eps", float("nan"), ValueError, r"Adam: eps must be in"),
])
def test_a_bad_hyperparameter_set_mid_run_is_refused_where_it_is_set(make, attr, value, err, msg):
    ps, opt = _two_step_setup(make)
    old = getattr(opt, attr)
    with pytest.raises(err, match=msg):
        setattr(opt, attr, value)
    assert getattr(opt, attr) == old
    twin_ps, twin = _two_step_setup(make)
    opt.step()                                # goes on with the old value
    twin.step()
    assert _snapshot(opt) == _snapshot(twin)


def test_a_good_hyperparameter_set_mid_run_is_used():
    ps, opt = _two_step_setup(MAKERS["sgd"])
    opt.lr = 1                                # an int is a number
    opt.step()
    np.testing.assert_array_equal(ps[0].data, [1.0 - 0.05 - 0.25, 2.0 - 0.05 - 0.25])
    assert opt.lr == 1.0 and type(opt.lr) is float


# -------------------------------------------------- state_dict, as PyTorch's

def _run(opt, ps, steps, seed=0):
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        for p in ps:
            p.grad = rng.standard_normal(p.shape)
        opt.step()


def _fresh_params():
    return [Tensor([1.0, 2.0], requires_grad=True), Tensor([[0.5, -1.0, 3.0]], requires_grad=True)]


@pytest.mark.parametrize("name", ["sgd", "momentum", "nesterov", "adam"])
def test_a_restored_optimizer_continues_exactly_as_the_original(name):
    ps = _fresh_params()
    opt = MAKERS[name](ps)
    _run(opt, ps, 3)
    sd = opt.state_dict()
    assert list(sd) == ["state", "param_groups", "steps"] and sd["steps"] == 3
    assert sd["param_groups"][0]["params"] == [0, 1] and sd["param_groups"][0]["lr"] == opt.lr
    twin_ps = [Tensor(p.data.copy(), requires_grad=True) for p in ps]
    twin = MAKERS[name](twin_ps)
    twin.lr = 0.5                                       # overwritten by the load
    twin.load_state_dict(sd)
    assert twin.lr == opt.lr and twin.steps == 3
    for i, s in opt.state.items():                      # copies, not the original's arrays
        for k, v in s.items():
            assert not isinstance(v, np.ndarray) or not np.shares_memory(v, twin.state[i][k])
    _run(opt, ps, 2, seed=1)
    _run(twin, twin_ps, 2, seed=1)
    for p, q in zip(ps, twin_ps):
        assert p.data.tobytes() == q.data.tobytes()


@needs_torch
def test_the_state_dict_layout_is_pytorchs():
    w = Tensor([1.0, 2.0], requires_grad=True)
    ours = optim.SGD([w], lr=0.1, momentum=0.9)
    tw = torch.tensor([1.0, 2.0], requires_grad=True)
    theirs = torch.optim.SGD([tw], lr=0.1, momentum=0.9)
    w.grad, tw.grad = np.ones(2), torch.ones(2)
    ours.step()
    theirs.step()
    a, b = ours.state_dict(), theirs.state_dict()
    assert set(b) <= set(a) and list(a["state"]) == list(b["state"]) == [0]
    assert a["param_groups"][0]["params"] == b["param_groups"][0]["params"] == [0]
    for key in ("lr", "momentum", "weight_decay", "nesterov"):
        assert a["param_groups"][0][key] == b["param_groups"][0][key], key
    np.testing.assert_array_equal(a["state"][0]["momentum"], b["state"][0]["momentum_buffer"].numpy())


def _adam_sd():
    ps = _fresh_params()
    opt = MAKERS["adam"](ps)
    _run(opt, ps, 2)
    return opt.state_dict()


@pytest.mark.parametrize("spoil, err, msg", [
    (lambda sd: sd["state"][1].pop("v"), KeyError, r"the state of parameter 1 has no 'v'"),
    (lambda sd: sd["state"][0].update(m=np.zeros(3)), RuntimeError,
     r"parameter 0 has shape \(2,\) but its state 'm' has shape \(3,\)"),
    (lambda sd: sd["state"][0].update(exp_avg=np.zeros(2)), KeyError,
     r"holds \['exp_avg'\], which Adam does not keep"),
    (lambda sd: sd["state"].update({5: {}}), ValueError, r"keyed by 5, not a parameter index from 0 to 1"),
    (lambda sd: sd["param_groups"][0].update(lr="0.01"), TypeError, r"Adam: lr must be a number"),
    (lambda sd: sd["param_groups"][0].update(betas=(0.9, 1.5)), ValueError, r"Adam: betas\[1\] must be in"),
    (lambda sd: sd["param_groups"][0].pop("eps"), ValueError, r"hyperparameters .* expected"),
    (lambda sd: sd["param_groups"][0].update(params=[0]), ValueError, r"this optimizer has 2 parameters"),
    (lambda sd: sd["param_groups"].append({}), ValueError, r"one parameter group"),
    (lambda sd: sd.update(steps=-1), ValueError, r"steps must be an integer >= 0"),
    (lambda sd: sd.pop("state"), ValueError, r"expected the keys 'state', 'param_groups'"),
    (lambda sd: sd["param_groups"][0].update(check_finite="no"), TypeError,
     r"check_finite must be True or False"),
], ids=["no-v", "m-shape", "torch-name", "index", "lr-str", "beta", "no-eps", "params", "groups",
        "steps", "no-state", "check-finite"])
def test_a_state_dict_that_does_not_fit_is_refused_and_changes_nothing(spoil, err, msg):
    ps = _fresh_params()
    opt = MAKERS["adam"](ps)
    _run(opt, ps, 1, seed=5)
    before = (_snapshot(opt), opt.lr, opt.b1, opt.b2, opt.eps)
    sd = _adam_sd()
    spoil(sd)
    with pytest.raises(err, match=msg):
        opt.load_state_dict(sd)
    assert (_snapshot(opt), opt.lr, opt.b1, opt.b2, opt.eps) == before


def test_an_sgd_state_dict_does_not_load_into_adam():
    ps = _fresh_params()
    sgd = MAKERS["momentum"](ps)
    _run(sgd, ps, 1)
    with pytest.raises(ValueError, match=r"the saved group has hyperparameters .*momentum.*nesterov"):
        MAKERS["adam"](ps).load_state_dict(sgd.state_dict())


# ------------------------------------------------------- settings changed after construction

def _one_param():
    p = Tensor(np.ones(3), requires_grad=True)
    p.grad = np.full(3, 0.5)
    return p


@pytest.mark.parametrize("make, attr, bad", [
    (lambda p: optim.SGD([p], lr=0.1, momentum=0.9), "nesterov", "yes"),
    (lambda p: optim.SGD([p], lr=0.1), "check_finite", 1),
    (lambda p: optim.Adam([p], lr=0.1), "check_finite", "False"),
])
def test_a_flag_set_after_construction_is_checked(make, attr, bad):
    """Before: opt.nesterov = "yes" was kept, and step() took the truthy string as True."""
    p = _one_param()
    opt = make(p)
    before = getattr(opt, attr)
    with pytest.raises(TypeError, match=f"{type(opt).__name__}: {attr} must be True or False, got {bad!r}"):
        setattr(opt, attr, bad)
    assert getattr(opt, attr) is before


def test_the_constructor_refuses_a_flag_that_is_not_a_bool():
    with pytest.raises(TypeError, match="SGD: check_finite must be True or False, got 'no'"):
        optim.SGD([_one_param()], lr=0.1, check_finite="no")


def test_adam_betas_set_after_construction_are_used_and_checked():
    """Before: opt.betas = (...) made a new attribute that step() never read."""
    p, q = _one_param(), _one_param()
    a, b = optim.Adam([p], lr=0.1), optim.Adam([q], lr=0.1, betas=(0.5, 0.6))
    a.betas = (0.5, 0.6)
    a.step(), b.step()
    assert a.betas == (0.5, 0.6) and np.array_equal(p.data, q.data)
    with pytest.raises(ValueError, match=r"Adam: betas\[1\] must be in \[0, 1\), got 1.5"):
        a.betas = (0.9, 1.5)
    assert a.betas == (0.5, 0.6)  # neither changed
