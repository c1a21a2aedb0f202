"""The ops PyTorch users reach for: abs, sqrt, max/min, maximum/minimum, where,
concatenate/stack, the view ops, matmul on 1-D and batched operands, tensor
exponents, comparisons.

Each is checked against central differences (float64), to second order through
``minigrad.grad(..., create_graph=True)``, and against PyTorch where installed.
"""

import numpy as np
import pytest
from conftest import needs_torch, torch
from hypothesis import given
from hypothesis import strategies as st

import minigrad as mg
from minigrad import Tensor, gradcheck, numerical_grad

dims = st.integers(1, 4)
shapes = st.lists(dims, min_size=1, max_size=3).map(tuple)
seeds = st.integers(0, 2**16)


def T(shape, seed, low=-2.0, high=2.0, grad=True):
    data = np.random.default_rng(seed).uniform(low, high, size=shape)
    return Tensor(data, requires_grad=grad)


def second_order_ok(f, *xs, seed=0, atol=1e-5, rtol=1e-4):
    """H v from create_graph against central differences of the first gradient.

    s(x) = sum_i <grad_i f(x), v_i>; its gradient is the Hessian-vector product H v.
    """
    rng = np.random.default_rng(seed)
    vs = [rng.standard_normal(x.shape) for x in xs]

    def s_value():
        gs = mg.grad(f(*xs), xs, allow_unused=True)
        return sum(float((g.data * v).sum()) for g, v in zip(gs, vs) if g is not None)

    gs = mg.grad(f(*xs), xs, create_graph=True, allow_unused=True)
    terms = [(g * v).sum() for g, v in zip(gs, vs) if g is not None and g.requires_grad]
    if not terms:
        analytic = [np.zeros(x.shape) for x in xs]
    else:
        total = terms[0]
        for t in terms[1:]:
            total = total + t
        hv = mg.grad(total, xs, allow_unused=True)
        analytic = [np.zeros(x.shape) if h is None else h.data for x, h in zip(xs, hv)]
    for x, a in zip(xs, analytic):
        n = numerical_grad(s_value, x.data)
        np.testing.assert_allclose(a, n, atol=atol, rtol=rtol)
    return True


@st.composite
def broadcast_pair(draw):
    full = draw(shapes)
    other = list(full[draw(st.integers(0, len(full) - 1)):])
    for i in range(len(other)):
        if draw(st.booleans()):
            other[i] = 1
    pair = (full, tuple(other))
    return pair if draw(st.booleans()) else pair[::-1]


# --------------------------------------------------------------- abs, sqrt

@given(shape=shapes, seed=seeds)
def test_abs_and_sqrt(shape, seed):
    a = T(shape, seed)
    a.data[np.abs(a.data) < 1e-3] = 0.5  # away from the kink
    assert gradcheck(lambda a: a.abs(), a)
    assert gradcheck(lambda a: abs(a) * 2, a)
    assert gradcheck(lambda a: a.sqrt(), T(shape, seed, low=0.2))


def test_abs_picks_subgradient_zero_at_zero():
    x = Tensor([-2.0, 0.0, 3.0], requires_grad=True)
    x.abs().sum().backward()
    assert x.grad.tolist() == [-1.0, 0.0, 1.0]


def test_abs_and_sqrt_to_second_order():
    a = T((3, 2), 1, low=0.3)
    assert second_order_ok(lambda a: (a.sqrt() * a.tanh()).sum(), a)
    b = T((3, 2), 2)
    assert second_order_ok(lambda b: ((b - 0.1).abs() * b.tanh()).sum(), b)


# ------------------------------------------------------------- max and min

@pytest.mark.parametrize("red", ["max", "min"])
@given(shape=shapes, seed=seeds, keepdims=st.booleans(), data=st.data())
def test_max_min_reductions(red, shape, seed, keepdims, data):
    axis = data.draw(st.one_of(st.none(), st.integers(-len(shape), len(shape) - 1),
                               st.just(tuple(range(len(shape))))))
    a = T(shape, seed)  # continuous random numbers: no ties
    out = getattr(a, red)(axis=axis, keepdims=keepdims)
    assert out.shape == getattr(np, red)(a.data, axis=axis, keepdims=keepdims).shape
    assert gradcheck(lambda a: getattr(a, red)(axis=axis, keepdims=keepdims), a)


def test_tied_maxima_share_the_gradient_evenly():
    x = Tensor([[1.0, 3.0, 3.0], [2.0, 2.0, 0.0]], requires_grad=True)
    x.max(axis=1).sum().backward()
    assert x.grad.tolist() == [[0.0, 0.5, 0.5], [0.5, 0.5, 0.0]]
    x.grad = None
    x.max().backward()                       # one tie of two over the whole tensor
    assert x.grad.tolist() == [[0.0, 0.5, 0.5], [0.0, 0.0, 0.0]]
    x.grad = None
    x.min(axis=0).sum().backward()
    assert x.grad.tolist() == [[1.0, 0.0, 0.0], [0.0, 1.0, 1.0]]
    assert x.amax is not None and Tensor.amax is Tensor.max


def test_max_and_min_to_second_order():
    a = T((3, 4), 3)
    assert second_order_ok(lambda a: (a.max(axis=1) * a.min(axis=1)).sum() + (a.max() ** 2), a)


def test_max_errors():
    x = Tensor(np.ones((0, 3)))
    with pytest.raises(IndexError, match=r"max: cannot reduce over the empty axis 0 of a tensor of "
                                         r"shape \(0, 3\)"):
        x.max(axis=0)
    assert x.max(axis=1).shape == (0,)  # the reduced axis has elements: an empty result
    with pytest.raises(IndexError, match=r"min: Dimension out of range .*got 2\) for shape \(2, 2\)"):
        Tensor(np.ones((2, 2))).min(axis=2)


# ----------------------------------------------------- maximum and minimum

@pytest.mark.parametrize("fn", [mg.maximum, mg.minimum])
@given(shapes=broadcast_pair(), seed=seeds)
def test_maximum_minimum_with_broadcasting(fn, shapes, seed):
    assert gradcheck(fn, T(shapes[0], seed), T(shapes[1], seed + 1))


def test_maximum_ties_give_half_to_each():
    a = Tensor([1.0, 2.0, 5.0], requires_grad=True)
    b = Tensor([1.0, 3.0, 4.0], requires_grad=True)
    (mg.maximum(a, b) + a.minimum(b) * 10).sum().backward()
    assert a.grad.tolist() == [5.5, 10.0, 1.0] and b.grad.tolist() == [5.5, 1.0, 10.0]


def test_maximum_with_a_number_is_a_leaky_clamp():
    x = Tensor([-1.0, 0.5, 2.0], requires_grad=True)
    y = x.maximum(0.0)
    y.sum().backward()
    assert y.data.tolist() == [0.0, 0.5, 2.0] and x.grad.tolist() == [0.0, 1.0, 1.0]


def test_maximum_minimum_to_second_order():
    a, b = T((3, 2), 4), T((2,), 5)
    assert second_order_ok(lambda a, b: (mg.maximum(a, b) * mg.minimum(a * a, b)).sum(), a, b)


# -------------------------------------------------------------------- where

@given(shapes=broadcast_pair(), seed=seeds)
def test_where_with_broadcasting(shapes, seed):
    a, b = T(shapes[0], seed), T(shapes[1], seed + 1)
    cond = np.random.default_rng(seed).random(np.broadcast_shapes(*shapes)) > 0.5
    assert gradcheck(lambda a, b: mg.where(cond, a, b), a, b)


def test_where_routes_the_gradient_by_the_condition():
    x = Tensor([-1.0, 2.0, -3.0], requires_grad=True)
    y = mg.where(x > 0, x * 10.0, 0.0) + x.where(x < 0, 1.0)
    y.sum().backward()
    assert y.data.tolist() == [-1.0, 21.0, -3.0] and x.grad.tolist() == [1.0, 10.0, 1.0]


def test_where_needs_a_boolean_condition():
    x = Tensor([1.0, 2.0])
    with pytest.raises(RuntimeError, match=r"where: expected the condition to be boolean .*float64"):
        mg.where(Tensor([1.0, 0.0]), x, x)
    with pytest.raises(ValueError, match=r"where: shapes \(3,\) \(cond\), \(2,\) and \(2,\)"):
        mg.where(np.ones(3, dtype=bool), x, x)


def test_where_to_second_order():
    a, b = T((4,), 6), T((4,), 7)
    cond = np.array([True, False, True, False])
    assert second_order_ok(lambda a, b: (mg.where(cond, a * a, b * a)).sum(), a, b)


# ------------------------------------------------------ concatenate, stack

@given(n=dims, m=dims, k=dims, seed=seeds, axis=st.sampled_from([0, 1, -1]))
def test_concatenate_and_stack(n, m, k, seed, axis):
    a, b = T((n, m), seed), T((n, m), seed + 1)
    assert gradcheck(lambda a, b: mg.stack([a, b, a * 2], axis=axis), a, b)
    c = T((n, k) if axis != 0 else (k, m), seed + 2)
    assert gradcheck(lambda a, c: mg.concatenate((a, c, a), axis=axis), a, c)
    assert mg.cat is mg.concatenate


def test_concatenate_and_stack_keep_each_inputs_share():
    a = Tensor([[1.0, 2.0]], requires_grad=True)
    b = Tensor([[3.0, 4.0], [5.0, 6.0]], requires_grad=True)
    y = mg.cat([a, b])
    assert y.shape == (3, 2)
    y.backward(np.arange(6.0).reshape(3, 2))
    assert a.grad.tolist() == [[0.0, 1.0]] and b.grad.tolist() == [[2.0, 3.0], [4.0, 5.0]]
    s = mg.stack([a[0], b[1]], axis=1)
    assert s.data.tolist() == [[1.0, 5.0], [2.0, 6.0]]


def test_concatenate_and_stack_errors():
    a, b = Tensor(np.ones((2, 3))), Tensor(np.ones((2, 4)))
    assert mg.cat([a, b], axis=1).shape == (2, 7)
    with pytest.raises(ValueError, match=r"concatenate: tensor 1 has shape \(2, 4\) but tensor 0 has "
                                         r"shape \(2, 3\); all sizes must match except along axis 0"):
        mg.cat([a, b])
    with pytest.raises(ValueError, match=r"stack: tensor 1 has shape \(2, 4\) but tensor 0 has shape"):
        mg.stack([a, b])
    with pytest.raises(ValueError, match="concatenate: expected a non-empty sequence"):
        mg.cat([])
    with pytest.raises(RuntimeError, match="stack: expected a non-empty sequence"):
        mg.stack([])
    with pytest.raises(TypeError, match="concatenate: expected a list or tuple of tensors, got Tensor"):
        mg.cat(a)
    with pytest.raises(IndexError, match=r"stack: Dimension out of range \(expected to be in range of "
                                         r"\[-3, 2\], but got 3\)"):
        mg.stack([a, a], axis=3)
    with pytest.raises(ValueError, match=r"concatenate: zero-dimensional"):
        mg.cat([Tensor(1.0), Tensor(2.0)])


def test_concatenate_and_stack_to_second_order():
    a, b = T((2, 3), 8), T((2, 3), 9)
    assert second_order_ok(lambda a, b: (mg.cat([a * b, b], axis=1).tanh()).sum()
                           + (mg.stack([a, b * b]) ** 2).sum(), a, b)


# ---------------------------------------------------------------- the views

@given(shape=shapes, seed=seeds)
def test_view_ops(shape, seed):
    a = T(shape, seed)
    assert gradcheck(lambda a: a.unsqueeze(0).unsqueeze(-1).squeeze() * 2, a)
    assert gradcheck(lambda a: a.flatten() ** 2, a)
    assert gradcheck(lambda a: a.permute(*reversed(range(a.ndim))) * 3, a)
    assert gradcheck(lambda a: a.expand(2, *a.shape).tanh(), a)
    assert gradcheck(lambda a: a.broadcast_to((3,) + a.shape) ** 2, a)


def test_view_shapes_follow_pytorch():
    x = Tensor(np.ones((2, 1, 3, 1)))
    assert x.squeeze().shape == (2, 3)
    assert x.squeeze(1).shape == (2, 3, 1)
    assert x.squeeze(0).shape == (2, 1, 3, 1)       # not of size 1: kept, as in PyTorch
    assert x.squeeze((1, 3)).shape == (2, 3)
    assert x.unsqueeze(4).shape == (2, 1, 3, 1, 1) and x.unsqueeze(-1).shape == (2, 1, 3, 1, 1)
    assert x.flatten().shape == (6,) and x.flatten(1).shape == (2, 3) and x.flatten(0, 2).shape == (6, 1)
    assert Tensor(5.0).flatten().shape == (1,)
    assert x.permute(3, 2, 1, 0).shape == (1, 3, 1, 2) and x.permute((3, 2, 1, 0)).shape == (1, 3, 1, 2)
    assert Tensor(np.ones((1, 3))).expand(4, 2, -1, -1).shape == (4, 2, 1, 3)
    v = Tensor(np.ones(3), requires_grad=True)
    v.expand(4, 3).sum().backward()
    assert v.grad.tolist() == [4.0, 4.0, 4.0]


def test_view_errors():
    x = Tensor(np.ones((2, 3)))
    with pytest.raises(IndexError, match=r"unsqueeze: Dimension out of range \(expected to be in range of "
                                         r"\[-3, 2\], but got 3\)"):
        x.unsqueeze(3)
    with pytest.raises(IndexError, match=r"squeeze: Dimension out of range"):
        x.squeeze(2)
    with pytest.raises(ValueError, match=r"broadcast_to: cannot broadcast shape \(2, 3\) to \(4, 3\)"):
        x.expand(4, 3)
    with pytest.raises(ValueError, match=r"expand: -1 is not allowed for the new leading axis 0"):
        x.expand(-1, 2, 3)
    with pytest.raises(RuntimeError, match=r"transpose: axis 1 appears more than once"):
        x.permute(1, 1)
    with pytest.raises(ValueError, match=r"flatten: start_dim 1 comes after end_dim 0"):
        x.flatten(1, 0)


# ------------------------------------------------------------------- matmul

MATMUL_SHAPES = [((3,), (3,)), ((3,), (3, 4)), ((2, 3), (3,)), ((2, 5, 3), (3, 4)), ((3,), (2, 3, 4)),
                 ((2, 5, 3), (3,)), ((2, 1, 4, 3), (5, 3, 2)), ((1, 4, 3), (2, 3, 2))]


@pytest.mark.parametrize("sa, sb", MATMUL_SHAPES)
def test_matmul_on_vectors_and_batches(sa, sb):
    a, b = T(sa, 1), T(sb, 2)
    out = a @ b
    assert out.shape == (a.data @ b.data).shape
    np.testing.assert_allclose(out.data, a.data @ b.data, rtol=1e-14)
    assert gradcheck(lambda a, b: a @ b, a, b)


@pytest.mark.parametrize("sa, sb", MATMUL_SHAPES)
def test_matmul_to_second_order(sa, sb):
    a, b = T(sa, 3), T(sb, 4)
    assert second_order_ok(lambda a, b: ((a @ b).tanh()).sum(), a, b)


def test_matmul_saves_only_what_the_needed_gradients_read():
    x, w = Tensor(np.ones((4, 3))), Tensor(np.ones((3, 2)), requires_grad=True)
    saved = (x @ w).grad_fn.saved
    assert saved[0] is not None and saved[1] is None          # dW = x.T @ g reads x only
    saved = (w.T @ x.T).grad_fn.saved
    assert saved[0] is None and saved[1] is not None          # dA = g @ B.T reads B only


def test_matmul_errors_name_the_shapes():
    with pytest.raises(ValueError, match=r"matmul: shapes \(2, 3\) and \(2,\) are not aligned: "
                                         r"3 \(dim 1 of A\) != 2 \(dim 0 of B\)"):
        Tensor(np.ones((2, 3))) @ Tensor(np.ones(2))
    with pytest.raises(ValueError, match=r"matmul: the batch dimensions \(2,\) and \(3,\)"):
        Tensor(np.ones((2, 4, 3))) @ Tensor(np.ones((3, 3, 5)))
    with pytest.raises(ValueError, match=r"matmul: both operands must have at least one axis, got "
                                         r"shapes \(\) and \(2,\)"):
        Tensor(2.0) @ Tensor(np.ones(2))


# -------------------------------------------------------- tensor exponents

@given(shapes=broadcast_pair(), seed=seeds)
def test_pow_with_a_tensor_exponent(shapes, seed):
    a, p = T(shapes[0], seed, low=0.5, high=2.0), T(shapes[1], seed + 1)
    assert gradcheck(lambda a, p: a ** p, a, p)
    assert gradcheck(lambda p: 2.0 ** p, p)
    assert gradcheck(lambda p: np.full(shapes[0], 1.5) ** p, p)
    assert gradcheck(lambda a: a ** np.full(shapes[1], 2.5), a)


def test_pow_exponent_gradient_is_g_y_log_a():
    a = Tensor([2.0, 3.0], requires_grad=True)
    p = Tensor([3.0, 0.5], requires_grad=True)
    (a ** p).sum().backward()
    np.testing.assert_allclose(p.grad, a.data ** p.data * np.log(a.data), rtol=1e-14)
    np.testing.assert_allclose(a.grad, p.data * a.data ** (p.data - 1), rtol=1e-14)


def test_pow_at_zero_follows_pytorch():
    a = Tensor([0.0, 0.0, 2.0], requires_grad=True)
    p = Tensor([2.0, 0.0, 0.0], requires_grad=True)
    (a ** p).sum().backward()
    assert a.grad.tolist() == [0.0, 0.0, 0.0] and p.grad.tolist() == [0.0, 0.0, np.log(2.0)]


def test_pow_with_a_tensor_exponent_to_second_order():
    a, p = T((3,), 5, low=0.5), T((3,), 6)
    assert second_order_ok(lambda a, p: (a ** p).sum() + (3.0 ** (p * a)).sum(), a, p)


# --------------------------------------------------------------- comparisons

def test_comparisons_are_elementwise_boolean_arrays():
    x, y = Tensor([1.0, 2.0, 3.0]), Tensor([3.0, 2.0, 1.0])
    assert (x == y).tolist() == [False, True, False] and (x != y).tolist() == [True, False, True]
    assert (x < y).tolist() == [True, False, False] and (x <= 2).tolist() == [True, True, False]
    assert (x > y).tolist() == [False, False, True] and (x >= np.array(2.0)).tolist() == [False, True, True]
    assert (np.array([1.0, 0.0, 3.0]) == x).tolist() == [True, False, True]
    assert isinstance(x == y, np.ndarray) and (x == y).dtype == bool
    assert (x == x.detach()).all()             # equal values, not identity
    assert (x == None) is False and x != "a"   # noqa: E711 -- not comparable: plain identity
    with pytest.raises(ValueError, match=r"==: shapes \(3,\) and \(2,\) cannot be broadcast"):
        _ = x == Tensor([1.0, 2.0])
    # Defining == drops the default hash; Tensors stay hashable by identity.
    a, b = Tensor([1.0]), Tensor([1.0])
    table = {a: "a", b: "b"}
    assert table[a] == "a" and table[b] == "b" and len({a, b, a}) == 2
    assert hash(a) == object.__hash__(a)


def test_a_comparison_mask_selects_and_gives_gradient_to_the_selected():
    x = Tensor([-1.0, 2.0, -3.0, 4.0], requires_grad=True)
    y = x[x > 0]
    assert y.data.tolist() == [2.0, 4.0]
    (y * y).sum().backward()
    assert x.grad.tolist() == [0.0, 4.0, 0.0, 8.0]


# ------------------------------------------------------------- the JVP rules

def test_every_new_op_has_a_matching_forward_rule():
    rng = np.random.default_rng(0)
    x, u = rng.uniform(0.5, 2.0, (3, 4)), rng.standard_normal((3, 4))
    p, du = rng.uniform(-1.0, 1.0, (4,)), rng.standard_normal(4)

    def f(x, p):
        return (x.abs().sqrt() * x.max(axis=0) + mg.maximum(x, 1.0) ** p
                + mg.where(x > 1.0, x, p) + mg.cat([x, x], axis=1)[:, ::2] * mg.stack([p, p, p]))

    _, dy = mg.jvp(f, (x, p), (u, du))
    eps = 1e-6
    with mg.no_grad():
        num = (f(Tensor(x + eps * u), Tensor(p + eps * du)).data
               - f(Tensor(x - eps * u), Tensor(p - eps * du)).data) / (2 * eps)
    np.testing.assert_allclose(dy.data, num, rtol=1e-6, atol=1e-7)


# ----------------------------------------------------------------- PyTorch

@needs_torch
@pytest.mark.parametrize("seed", range(3))
def test_new_ops_match_pytorch(seed):
    rng = np.random.default_rng(seed)
    xa, wa, pa = rng.normal(size=(2, 4, 3)), rng.normal(size=(3, 5)), rng.uniform(0.5, 1.5, size=(5,))
    xa[0, 0, :2] = 1.25                       # a tie for max and for maximum
    wa[0, :2] = 1.25

    def program(x, w, p, M):
        h = x @ w                             # batched (2, 4, 5)
        v = x[0, 0] @ w                       # 1-D @ 2-D  (5,)
        parts = [h.abs(), (h * h + 1).sqrt(), M.amax(h, 1), M.amin(h, (0, 2), True),
                 M.maximum(x, 1.25), M.minimum(h, v), M.where(h > 0, h, v * 2),
                 M.cat([h, h * 2], 1), M.stack([h, -h], 2), h.unsqueeze(1).squeeze(1),
                 h.flatten(1), h.permute(2, 0, 1), v.expand(3, 5), (h.abs() + 0.5) ** p,
                 2.0 ** (v * p), x.max(), M.amax(x, 2)]
        total = (v * v).sum()
        for i, part in enumerate(parts):
            total = total + part.mean() * (i + 1)
        return total

    class Ours:
        amax = staticmethod(lambda t, d, k=False: t.max(axis=d, keepdims=k))
        amin = staticmethod(lambda t, d, k=False: t.min(axis=d, keepdims=k))
        maximum, minimum, where, stack = mg.maximum, mg.minimum, mg.where, mg.stack
        cat = staticmethod(lambda ts, d: mg.cat(ts, axis=d))

    class Theirs:
        amax = staticmethod(lambda t, d, k=False: torch.amax(t, dim=d, keepdim=k))
        amin = staticmethod(lambda t, d, k=False: torch.amin(t, dim=d, keepdim=k))
        maximum = staticmethod(lambda a, b: torch.maximum(a, torch.as_tensor(b)))
        minimum, where, cat, stack = torch.minimum, torch.where, torch.cat, torch.stack

    ours = [Tensor(v, requires_grad=True) for v in (xa, wa, pa)]
    theirs = [torch.tensor(v, requires_grad=True) for v in (xa, wa, pa)]
    lo, lt = program(*ours, Ours), program(*theirs, Theirs)
    lo.backward()
    lt.backward()
    assert abs(lo.item() - lt.item()) < 1e-10
    for o, t in zip(ours, theirs):
        np.testing.assert_allclose(o.grad, t.grad.numpy(), atol=1e-10, rtol=1e-10)


@needs_torch
def test_tie_rules_are_pytorchs():
    data = np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 0.0]])
    x, xt = Tensor(data, requires_grad=True), torch.tensor(data, requires_grad=True)
    x.max(axis=1).sum().backward()
    torch.amax(xt, dim=1).sum().backward()
    np.testing.assert_array_equal(x.grad, xt.grad.numpy())
    xt.grad = None
    x.grad = None
    x.max().backward()
    xt.max().backward()                      # the full reduction also shares evenly
    np.testing.assert_array_equal(x.grad, xt.grad.numpy())
    xt.grad = None
    torch.max(xt, dim=1).values.sum().backward()  # max(dim) picks one index instead: not followed
    assert xt.grad.numpy().tolist() != [[0.0, 0.5, 0.5], [0.5, 0.5, 0.0]]
    a, b = np.array([1.0, 2.0]), np.array([1.0, 3.0])
    ao, bo = Tensor(a, requires_grad=True), Tensor(b, requires_grad=True)
    at, bt = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    mg.maximum(ao, bo).sum().backward()
    torch.maximum(at, bt).sum().backward()
    np.testing.assert_array_equal(ao.grad, at.grad.numpy())
    np.testing.assert_array_equal(bo.grad, bt.grad.numpy())


@needs_torch
def test_pow_at_zero_matches_pytorch():
    a, p = np.array([0.0, 0.0, 2.0, 0.0]), np.array([2.0, 0.0, 0.0, 0.5])
    ao, po = Tensor(a, requires_grad=True), Tensor(p, requires_grad=True)
    at, pt = torch.tensor(a, requires_grad=True), torch.tensor(p, requires_grad=True)
    with np.errstate(divide="ignore"):
        (ao ** po).sum().backward()
    (at ** pt).sum().backward()
    np.testing.assert_array_equal(ao.grad, at.grad.numpy())
    np.testing.assert_array_equal(po.grad, pt.grad.numpy())
    z, zt = Tensor([0.0, 1.0], requires_grad=True), torch.tensor([0.0, 1.0], requires_grad=True)
    (z ** 0).sum().backward()
    (zt ** 0).sum().backward()
    np.testing.assert_array_equal(z.grad, zt.grad.numpy())
