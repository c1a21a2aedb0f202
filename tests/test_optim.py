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
