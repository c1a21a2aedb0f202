"""Forward mode: JVPs agree with reverse mode (v.(J u) == (v J).u) and with central differences."""

import inspect

import numpy as np
import pytest
from conftest import needs_torch, torch

import minigrad as mg
from minigrad import Function, Tensor, ops
from minigrad.forward import JVP_RULES, jacfwd, jvp

TARGETS = np.array([2, 0, 1])


def _onehot_cols(a):
    return ops.ScatterAdd.apply(a, idx=(np.array([0, 2, 0]),), shape=(4,))


# name, fn, input shapes, (low, high) of the random inputs
CASES = [
    ("add sub mul div, broadcasting", lambda a, b: (a + b) * (a - b) / (b * b + 1.0),
     [(3, 4), (4,)], (-2, 2)),
    ("scalars on either side", lambda a: (2.0 - a) * 3.0 + 1.0 / (a + 5.0), [(2, 3)], (-2, 2)),
    ("neg and pow", lambda a: (-a) ** 3 + (a * a + 1.0) ** 0.5, [(4,)], (-2, 2)),
    ("matmul relu sum", lambda a, w: (a @ w).relu().sum(axis=0), [(3, 4), (4, 5)], (-2, 2)),
    ("mean transpose reshape",
     lambda a: a.mean(axis=1, keepdims=True) * a.T.reshape(2, 3).T.reshape(3, 2), [(3, 2)], (-2, 2)),
    ("transpose with axes", lambda a: a.transpose(2, 0, 1).reshape(4, 6).tanh(), [(2, 3, 4)], (-2, 2)),
    ("getitem exp log", lambda a: a[1:, [0, 2, 2]].exp() + a[0].log()[:3], [(3, 4)], (0.5, 2)),
    ("sigmoid tanh", lambda a: a.sigmoid() * a.tanh(), [(5,)], (-3, 3)),
    ("softmax cross_entropy log_softmax",
     lambda z: z.softmax(axis=1).cross_entropy(TARGETS) + z.log_softmax(axis=0).sum() * 0.1,
     [(3, 4)], (-2, 2)),
    ("cross_entropy_with_logits", lambda z: z.cross_entropy_with_logits(TARGETS), [(3, 4)], (-3, 3)),
    ("broadcast_to and scatter_add",
     lambda a, b: ops.BroadcastTo.apply(a, shape=(2, 3, 4)).sum(axis=0) * _onehot_cols(b), [(3, 1), (3,)],
     (-2, 2)),
    ("logsumexp", lambda a: a.logsumexp(axis=1) + a.logsumexp(axis=0, keepdims=True).sum() * 0.5,
     [(3, 4)], (-3, 3)),
    ("a two-layer network", lambda x, w1, w2: ((x @ w1).tanh() @ w2).log_softmax(axis=1),
     [(3, 2), (2, 4), (4, 3)], (-1, 1)),
    ("layer_norm", lambda a, w: mg.layer_norm(a @ w) * 2.0, [(3, 4), (4, 5)], (-2, 2)),
    ("batch_norm", lambda a, w: mg.batch_norm(a @ w) * 2.0, [(3, 4), (4, 5)], (-2, 2)),
    ("setitem and clone", lambda a, b: ops.SetItem.apply(a.clone() * 2.0, b, idx=(slice(0, 2),)),
     [(3, 4), (2, 4)], (-2, 2)),
    ("abs sqrt", lambda a: (a - 0.3).abs() * (a * a + 1.0).sqrt(), [(3, 4)], (-2, 2)),
    ("max and min reductions", lambda a: a.max(axis=1) * a.min(axis=0, keepdims=True).sum() + a.max(),
     [(3, 4)], (-2, 2)),
    ("maximum minimum where",
     lambda a, b: mg.maximum(a, b) * mg.minimum(a, 0.5) + mg.where(a > 0, a * 3.0, b), [(3, 4), (4,)],
     (-2, 2)),
    ("pow with tensor exponents", lambda a, p: a ** p + 2.0 ** p, [(3, 4), (4,)], (0.5, 2)),
    ("matmul batched and 1-D", lambda a, b, v: (a @ b) @ v + v @ b.T @ a[0].T, [(2, 3, 4), (4, 5), (5,)],
     (-2, 2)),
    ("concatenate stack squeeze unsqueeze",
     lambda a, b: (mg.stack([a, b], axis=1).sum(axis=2)
                   * mg.cat([a, b], axis=1)[:, 1:3].unsqueeze(0).squeeze(0)),
     [(3, 4), (3, 4)], (-2, 2)),
    ("expand permute flatten", lambda a: a.unsqueeze(0).expand(2, -1, -1).permute(2, 0, 1).flatten(1).tanh(),
     [(3, 4)], (-2, 2)),
]
IDS = [c[0] for c in CASES]


def make(shapes, low, high, seed):
    rng = np.random.default_rng(seed)
    xs = [rng.uniform(low, high, size=s) for s in shapes]
    us = [rng.standard_normal(s) for s in shapes]
    return xs, us, rng


def test_every_op_has_a_forward_rule():
    all_ops = {c for _, c in inspect.getmembers(ops, inspect.isclass)
               if issubclass(c, Function) and c is not Function}
    assert all_ops - set(JVP_RULES) == set()


def test_the_cases_below_cover_every_op():
    seen = set()
    for _, fn, shapes, (low, high) in CASES:
        xs, _, _ = make(shapes, low, high, 0)
        seen |= set(mg.trace(fn, *xs).op_counts())
    all_names = {c.name for c in JVP_RULES}
    assert all_names - seen == set(), "add a case that uses these ops"


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("name, fn, shapes, bounds", CASES, ids=IDS)
def test_v_dot_Ju_equals_vJ_dot_u(name, fn, shapes, bounds, seed):
    xs, us, rng = make(shapes, *bounds, seed)
    out, dout = jvp(fn, tuple(xs), tuple(us))
    v = rng.standard_normal(out.shape)

    leaves = [Tensor(x, requires_grad=True) for x in xs]
    vjps = mg.grad(fn(*leaves), leaves, grad_output=v)
    forward = float((v * dout.data).sum())
    reverse = sum(float((g.data * u).sum()) for g, u in zip(vjps, us))
    np.testing.assert_allclose(forward, reverse, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name, fn, shapes, bounds", CASES, ids=IDS)
def test_jvp_equals_a_central_difference_along_u(name, fn, shapes, bounds):
    xs, us, _ = make(shapes, *bounds, 7)
    out, dout = jvp(fn, tuple(xs), tuple(us))
    eps = 1e-6
    with mg.no_grad():
        plus = fn(*[Tensor(x + eps * u) for x, u in zip(xs, us)]).data
        minus = fn(*[Tensor(x - eps * u) for x, u in zip(xs, us)]).data
        value = fn(*[Tensor(x) for x in xs]).data
    np.testing.assert_allclose(out.data, value, rtol=1e-14)
    np.testing.assert_allclose(dout.data, (plus - minus) / (2 * eps), rtol=1e-6, atol=1e-7)


def reverse_jacobian(fn, x):
    """Row i of J is the VJP of the one-hot cotangent e_i: one backward pass per output."""
    xt = Tensor(x, requires_grad=True)
    out = fn(xt)
    rows = []
    for i in range(out.size):
        e = np.zeros(out.size)
        e[i] = 1.0
        (g,) = mg.grad(out, xt, grad_output=e.reshape(out.shape), retain_graph=True)
        rows.append(g.data.reshape(-1))
    return np.stack(rows)


def test_jacfwd_builds_the_same_matrix_as_reverse_mode():
    rng = np.random.default_rng(0)
    w = Tensor(rng.standard_normal((4, 3)))
    fn = lambda x: (x @ w).tanh() * x.sum()  # x: (2, 4) -> (2, 3)
    x = rng.standard_normal((2, 4))
    jf = jacfwd(fn, x)
    assert jf.shape == (6, 8)
    np.testing.assert_allclose(jf, reverse_jacobian(fn, x), rtol=1e-12, atol=1e-14)


def test_jacfwd_of_an_elementwise_function_is_diagonal():
    x = np.array([0.3, -1.2, 2.0])
    np.testing.assert_allclose(jacfwd(lambda t: t.tanh(), x), np.diag(1 - np.tanh(x) ** 2), rtol=1e-14)


def test_several_outputs_and_a_list_of_inputs():
    a, b = np.array([1.0, 2.0]), np.array([3.0, -1.0])
    (s, p), (ds, dp) = jvp(lambda a, b: (a + b, a * b), [a, b], [np.ones(2), np.zeros(2)])
    np.testing.assert_array_equal(ds.data, [1.0, 1.0])
    np.testing.assert_array_equal(dp.data, b)
    outs, douts = jvp(lambda a: [a * 2, a], a, np.ones(2))
    assert isinstance(outs, list) and isinstance(douts, list)
    np.testing.assert_array_equal(douts[1].data, [1.0, 1.0])  # the identity passes u through


def test_outputs_that_do_not_depend_on_the_inputs_get_zero_tangents():
    c = Tensor([1.0, 2.0])
    out, dout = jvp(lambda a: c * 3.0, np.array([5.0, 6.0]), np.ones(2))
    np.testing.assert_array_equal(dout.data, [0.0, 0.0])


def test_jvp_records_no_graph_and_leaves_the_inputs_alone():
    x = Tensor([0.5, 1.5], requires_grad=True)
    out, dout = jvp(lambda t: (t * t).exp(), x, np.ones(2))
    assert not out.requires_grad and out.parents == ()
    assert not dout.requires_grad
    assert x.grad is None and x.requires_grad and x._version == 0


def test_float32_stays_float32():
    x = Tensor([0.1, 0.2], dtype=np.float32)
    out, dout = jvp(lambda t: t.sigmoid(), x, np.ones(2))
    assert out.dtype == np.float32 and dout.dtype == np.float32


def test_forward_over_reverse_gives_hessian_vector_products():
    rng = np.random.default_rng(1)
    a = Tensor(rng.standard_normal((3, 3)))
    f = lambda x: (a @ x).tanh().sum() + (x * x * x).sum()

    def gradient(x):
        x.requires_grad_()
        return mg.grad(f(x), x, create_graph=True)[0]

    x, u = rng.standard_normal((3, 1)), rng.standard_normal((3, 1))
    _, hu = jvp(gradient, x, u)
    eps = 1e-5
    numeric = (gradient(Tensor(x + eps * u)).data - gradient(Tensor(x - eps * u)).data) / (2 * eps)
    np.testing.assert_allclose(hu.data, numeric, rtol=1e-6, atol=1e-8)


def test_jvp_inside_trace_is_still_traced():
    graph = mg.trace(lambda x: jvp(lambda t: t.exp(), x, np.ones(2))[0] * 2, np.array([0.0, 1.0]))
    assert graph.op_counts() == {"exp": 1, "mul": 1}


def test_mismatched_tangents_give_clear_errors():
    f = lambda a, b: a * b
    with pytest.raises(ValueError, match=r"jvp: tangent 1 has shape \(3,\) but input 1 has shape \(2,\)"):
        jvp(f, (np.ones(2), np.ones(2)), (np.ones(2), np.ones(3)))
    with pytest.raises(ValueError, match="jvp: got 2 inputs but 1 tangents"):
        jvp(f, (np.ones(2), np.ones(2)), (np.ones(2),))
    with pytest.raises(TypeError, match="same structure"):
        jvp(lambda a: a, np.ones(2), [np.ones(2)])
    with pytest.raises(TypeError, match="tangent 0 must be numeric"):
        jvp(lambda a: a, np.ones(2), np.array(["a", "b"]))
    with pytest.raises(TypeError, match="fn must return a Tensor or a tuple of Tensors, got float"):
        jvp(lambda a: 1.0, np.ones(2), np.ones(2))


def test_in_place_changes_inside_fn_are_refused():
    def fn(a):
        b = a * 2
        b[0] = 5.0  # invisible to forward mode: refuse rather than give a wrong tangent
        return b * 3

    with pytest.raises(RuntimeError, match="jvp: .*changed in place"):
        jvp(fn, np.ones(3), np.ones(3))


def test_an_op_without_a_rule_is_named():
    class Cube(Function):
        name = "cube"

        @staticmethod
        def forward(ctx, a):
            return a ** 3

    with pytest.raises(NotImplementedError, match="jvp: op 'cube'"):
        jvp(lambda a: Cube.apply(a), np.ones(2), np.ones(2))


def test_the_hook_is_restored_after_an_error():
    from minigrad.function import _state

    with pytest.raises(ZeroDivisionError):
        jvp(lambda a: 1 / 0, np.ones(2), np.ones(2))
    assert _state.hooks == ()


@needs_torch
def test_matches_pytorch_jvp():
    from torch.func import jvp as torch_jvp

    rng = np.random.default_rng(5)
    x, w, u = rng.standard_normal((4, 3)), rng.standard_normal((3, 2)), rng.standard_normal((4, 3))
    ours = jvp(lambda t: (t @ Tensor(w)).softmax(axis=1), x, u)[1].data
    wt = torch.tensor(w)
    theirs = torch_jvp(lambda t: torch.softmax(t @ wt, dim=1), (torch.tensor(x),), (torch.tensor(u),))[1]
    np.testing.assert_allclose(ours, theirs.numpy(), rtol=1e-12)


def test_forward_over_reverse_through_the_fused_loss_gives_the_hessian_vector_product():
    # The fused loss keeps log p, an array of its own; its tangent must follow it into the
    # create_graph backward pass, or the jvp of the gradient misses the softmax's curvature.
    r = np.random.default_rng(12)
    x, y = mg.Tensor(r.standard_normal((5, 3))), np.array([0, 2, 1, 1, 0])
    w0 = r.standard_normal((3, 3))

    def gradient(w):
        w.requires_grad_()
        return mg.grad((x @ w).cross_entropy_with_logits(y), w, create_graph=True)[0]

    v = r.standard_normal(w0.shape)
    _, hv = mg.jvp(gradient, mg.Tensor(w0), v)
    h = 1e-5
    fd = (gradient(mg.Tensor(w0 + h * v)).data - gradient(mg.Tensor(w0 - h * v)).data) / (2 * h)
    np.testing.assert_allclose(hv.data, fd, rtol=1e-6, atol=1e-9)
    assert np.abs(hv.data).max() > 1e-3  # the curvature is there to be missed
