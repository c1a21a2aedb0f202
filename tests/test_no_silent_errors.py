"""No silent wrong answer, no obscure error: each case raises a clear error naming
the op and the shapes or values, of the type PyTorch raises, or gives PyTorch's answer.
"""

import numpy as np
import pytest
from conftest import needs_torch, torch

import minigrad as mg
from minigrad import Tensor, nn

# ------------------------------------------------------- tensors as indices


def test_a_boolean_mask_selects_the_masked_elements():
    w = Tensor([10.0, 20.0, 30.0], requires_grad=True)
    for mask in (np.array([True, False, True]), w > 15, Tensor._make(np.array([True, False, True]))):
        y = w[mask]
        assert y.data.tolist() == ([10.0, 30.0] if mask[0] else [20.0, 30.0])
    w[np.array([True, False, True])].sum().backward()
    w[np.array([2, 2])].sum().backward()     # integer positions still gather (repeats add up)
    assert w.grad.tolist() == [1.0, 0.0, 3.0]


@pytest.mark.parametrize("index", [Tensor([0.7, 2.9]), Tensor([0.0, 2.0]), Tensor([1.0, 0.0, 1.0]),
                                   (slice(None), Tensor([1.0])), np.array([0.0, 1.0])])
def test_float_indices_raise_instead_of_truncating(index):
    w = Tensor(np.arange(9.0).reshape(3, 3), requires_grad=True)
    with pytest.raises(IndexError, match=r"getitem: tensors used as indices must be long, int, byte or "
                                         r"bool tensors, got dtype float64"):
        w[index]



# ----------------------------------------------------------------------- pow


def test_x_to_the_zero_has_gradient_zero_at_zero():
    x = Tensor([0.0, 2.0], requires_grad=True)
    (x ** 0).sum().backward()
    assert x.grad.tolist() == [0.0, 0.0]
    (g,) = mg.grad((x ** 0).sum(), x, create_graph=True)
    assert g.data.tolist() == [0.0, 0.0]
    _, dy = mg.jvp(lambda t: t ** 0, np.array([0.0, 1.0]), np.ones(2))
    assert dy.data.tolist() == [0.0, 0.0]


@pytest.mark.parametrize("p, what", [(1j, "a complex number"), (np.complex128(2), "a complex number"),
                                     (np.array([1j]), "a complex number"), ("2", "str '2'"),
                                     ([2.0], "list"), (None, "NoneType")])
def test_bad_exponents_and_bases_are_type_errors_naming_pow(p, what):
    w = Tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(TypeError, match=f"pow: the exponent must be a real number.*got {what}"):
        w ** p
    with pytest.raises(TypeError, match=f"pow: the base must be a real number.*got {what}"):
        p ** w


# --------------------------------------------------------------------- axes


AXIS_OPS = {
    "sum": lambda x, ax: x.sum(axis=ax), "mean": lambda x, ax: x.mean(axis=ax),
    "softmax": lambda x, ax: x.softmax(axis=ax), "log_softmax": lambda x, ax: x.log_softmax(axis=ax),
    "transpose": lambda x, ax: x.transpose(ax, 0),
}


@pytest.mark.parametrize("name", AXIS_OPS)
def test_an_axis_out_of_range_is_an_index_error(name):
    x = Tensor(np.ones((2, 3)))
    with pytest.raises(IndexError, match=rf"{name}: Dimension out of range \(expected to be in range of "
                                         rf"\[-2, 1\], but got 2\) for shape \(2, 3\)"):
        AXIS_OPS[name](x, 2)
    with pytest.raises(IndexError, match=rf"{name}: Dimension out of range .*got -3\)"):
        AXIS_OPS[name](x, -3)


@pytest.mark.parametrize("name", AXIS_OPS)
def test_a_float_axis_is_a_type_error(name):
    x = Tensor(np.ones((2, 3)))
    with pytest.raises(TypeError, match=rf"{name}: axis must be an int.*got 1.0 \(float\) "
                                        rf"for shape \(2, 3\)"):
        AXIS_OPS[name](x, 1.0)


@pytest.mark.parametrize("name", ["sum", "mean"])
def test_a_repeated_axis_is_a_runtime_error(name):
    x = Tensor(np.ones((2, 3)))
    with pytest.raises(RuntimeError, match=rf"{name}: axis 1 appears more than once in \(1, -1\) "
                                           rf"for shape \(2, 3\)"):
        AXIS_OPS[name](x, (1, -1))


def test_transpose_checks_its_axes():
    x = Tensor(np.ones((2, 3, 4)))
    with pytest.raises(RuntimeError, match=r"transpose: axis 0 appears more than once in \(0, 0, 1\)"):
        x.transpose(0, 0, 1)
    with pytest.raises(TypeError, match=r"transpose: axis must be an int, got 0.5"):
        x.transpose(0.5, 1, 2)


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_softmax_over_an_empty_axis_is_empty_as_in_pytorch(name):
    for shape, axis in (((2, 0), 1), ((0, 3), 0), ((0, 3), 1)):
        x = Tensor(np.ones(shape), requires_grad=True)
        y = getattr(x, name)(axis=axis)
        assert y.shape == shape
        y.sum().backward()
        assert x.grad.shape == shape


def test_softmax_axis_must_be_one_int():
    with pytest.raises(TypeError, match=r"softmax: axis must be an int, got None"):
        Tensor(np.ones((2, 3))).softmax(axis=None)
    with pytest.raises(TypeError, match=r"softmax: axis must be an int, got \(0, 1\)"):
        Tensor(np.ones((2, 3))).softmax(axis=(0, 1))


# ------------------------------------------------------------ construction


def test_reshape_with_a_float_size_names_reshape():
    with pytest.raises(TypeError, match=r"reshape: the new shape must be ints, got \(2.0, 6\).* for a "
                                        r"tensor of shape \(12,\)"):
        Tensor(np.ones(12)).reshape(2.0, 6)


def test_a_ragged_list_names_tensor():
    with pytest.raises(ValueError, match=r"Tensor: the data is ragged"):
        Tensor([[1, 2], [3]])
    with pytest.raises(ValueError, match=r"as_tensor: the data is ragged"):
        mg.as_tensor([[1.0], [2.0, 3.0]])


# ------------------------------------------------------------------- losses


@pytest.mark.parametrize("loss", ["cross_entropy", "cross_entropy_with_logits"])
def test_an_empty_batch_is_refused_in_forward(loss):
    z = Tensor(np.ones((0, 3)), requires_grad=True)
    with pytest.raises(ValueError, match=rf"{loss}: the batch is empty \(input shape \(0, 3\)\)"):
        getattr(z, loss)(np.zeros(0, dtype=np.int64))


# ------------------------------------------------------------------ dropout


@pytest.mark.parametrize("p", ["0.5", None, True, [0.5]])
def test_dropout_p_must_be_a_number(p):
    with pytest.raises(TypeError, match="Dropout: p must be a number"):
        nn.Dropout(p)
    # (p outside [0, 1), NaN included, was already a ValueError: tests/test_nn.py)



# ------------------------------------------------------------------- dtypes

MIXED = {
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b, "matmul": lambda a, b: a @ b.T,
    "maximum": lambda a, b: mg.maximum(a, b), "where": lambda a, b: mg.where(np.eye(3, dtype=bool), a, b),
    "concatenate": lambda a, b: mg.cat([a, b]), "stack": lambda a, b: mg.stack([a, b]),
    "pow_tensor": lambda a, b: a ** b,
}


@pytest.mark.parametrize("name", MIXED)
@pytest.mark.parametrize("leaf_first", [True, False])
def test_a_float32_leaf_mixed_with_float64_gets_a_float32_grad(name, leaf_first):
    rng = np.random.default_rng(0)
    w = Tensor(rng.uniform(0.5, 1.5, (3, 3)), dtype=np.float32, requires_grad=True)
    x = Tensor(rng.uniform(0.5, 1.5, (3, 3)), requires_grad=True)   # float64
    out = MIXED[name](w, x) if leaf_first else MIXED[name](x, w)
    assert out.dtype == np.float64
    out.sum().backward()
    assert w.grad.dtype == np.float32 and x.grad.dtype == np.float64
    w64 = Tensor(w.data.astype(np.float64), requires_grad=True)
    ref = MIXED[name](w64, x) if leaf_first else MIXED[name](x, w64)
    ref.sum().backward()
    np.testing.assert_allclose(w.grad, w64.grad, rtol=1e-6)


@needs_torch
def test_mixed_dtypes_follow_pytorch():
    w = torch.ones(2, dtype=torch.float32, requires_grad=True)
    (w * torch.ones(2, dtype=torch.float64)).sum().backward()
    ours = Tensor(np.ones(2), dtype=np.float32, requires_grad=True)
    (ours * Tensor(np.ones(2))).sum().backward()
    assert str(ours.grad.dtype) == str(w.grad.dtype).replace("torch.", "")


# ----------------------------------------------------------- numpy operands


@pytest.mark.parametrize("combine", [lambda x, w: x @ w, lambda x, w: w.T @ x.T,
                                     lambda x, w: (x * w[:, 0]).sum(axis=1, keepdims=True)])
def test_refilling_a_numpy_operand_before_backward_changes_nothing(combine):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 3))
    w = Tensor(rng.standard_normal((3, 2)), requires_grad=True)
    expected = mg.grad(combine(x.copy(), w).sum(), w)[0].data
    y = combine(x, w)
    x[...] = 123.0          # the caller reuses its buffer for the next batch
    y.sum().backward()
    np.testing.assert_array_equal(w.grad, expected)


# ------------------------------------------------------- a bool tensor is a mask

_MASK = [[True, False], [False, True]]


@pytest.mark.parametrize("f, expected", [
    (lambda m: m * 2.0, [[2.0, 0.0], [0.0, 2.0]]),
    (lambda m: 2.0 * m, [[2.0, 0.0], [0.0, 2.0]]),
    (lambda m: m + 0.5, [[1.5, 0.5], [0.5, 1.5]]),
    (lambda m: m - 1, [[0.0, -1.0], [-1.0, 0.0]]),
    (lambda m: m / 4, [[0.25, 0.0], [0.0, 0.25]]),
    (lambda m: m * np.array([1.5, 3.0]), [[1.5, 0.0], [0.0, 3.0]]),
    (lambda m: -m, [[-1.0, 0.0], [0.0, -1.0]]),
    (lambda m: m - m, [[0.0, 0.0], [0.0, 0.0]]),
    (lambda m: m.exp(), np.exp(np.array(_MASK, dtype=np.float64))),
    (lambda m: m.tanh(), np.tanh(np.array(_MASK, dtype=np.float64))),
    (lambda m: m.sigmoid(), 1 / (1 + np.exp(-np.array(_MASK, dtype=np.float64)))),
    (lambda m: m.sqrt(), [[1.0, 0.0], [0.0, 1.0]]),
    (lambda m: m.softmax(axis=1), np.exp([[1, 0], [0, 1]]) / np.exp([[1, 0], [0, 1]]).sum(1, keepdims=True)),
], ids=["*2.0", "2.0*", "+0.5", "-1", "/4", "*array", "neg", "m-m", "exp", "tanh", "sigmoid", "sqrt",
        "softmax"])
def test_a_mask_in_arithmetic_counts_as_zero_and_one_in_float64(f, expected):
    """Before: mask * 2.0 cast 2.0 to True (giving the mask back), exp(mask) was float16
    (2.719), -mask and mask - mask were NumPy TypeErrors. As in PyTorch, the result is a float."""
    out = f(Tensor(_MASK))
    assert out.dtype == np.float64
    np.testing.assert_allclose(out.data, expected, rtol=1e-15)


def test_a_mask_stays_a_mask_where_values_are_moved_not_computed():
    m = Tensor(_MASK)
    for out in (m.T, m.reshape(4), m[0], m.clone(), mg.as_tensor([True, False]), m * True):
        assert out.dtype == np.bool_, out
    assert (m.sum().item(), m.mean().item()) == (2, 0.5)


@needs_torch
def test_a_mask_in_arithmetic_beside_pytorch():
    m, tm = Tensor(_MASK), torch.tensor(_MASK)
    for f in (lambda a: a * 2.0, lambda a: a + 0.5, lambda a: a.exp(), lambda a: a.sigmoid()):
        np.testing.assert_allclose(f(m).data, f(tm).double().numpy(), rtol=1e-6)
        assert f(tm).dtype.is_floating_point


# ------------------------------------------------------- shapes that do not fit: RuntimeError, as in PyTorch

def _set_slice():
    t = Tensor(np.ones(4))
    t[0:2] = np.ones(3)


@pytest.mark.parametrize("f, phrase", [
    (lambda a, b: a * b, r"mul: shapes \(2, 3\) and \(4,\)"),
    (lambda a, b: a @ a, r"matmul: shapes \(2, 3\) and \(2, 3\)"),
    (lambda a, b: a.reshape(5), r"reshape: cannot reshape a tensor of shape \(2, 3\)"),
    (lambda a, b: mg.cat([a, b]), r"concatenate: tensor 1 has shape \(4,\)"),
    (lambda a, b: mg.stack([a, b]), r"stack: tensor 1 has shape \(4,\)"),
    (lambda a, b: mg.where(np.ones((2, 3), bool), a, b), r"where: shapes"),
    (lambda a, b: b.add_(a), r"add_: the operand of shape \(2, 3\)"),
    (lambda a, b: a.expand(5, 5), r"broadcast_to: cannot broadcast shape \(2, 3\)"),
    (lambda a, b: _set_slice(), r"cannot set index slice\(0, 2, None\) of a tensor of shape \(4,\)"),
], ids=["broadcast", "matmul", "reshape", "cat", "stack", "where", "add_", "expand", "setitem"])
def test_shapes_that_do_not_fit_raise_a_runtime_error_naming_op_and_shapes(f, phrase):
    a, b = Tensor(np.ones((2, 3)), requires_grad=True), Tensor(np.ones(4))
    with pytest.raises(RuntimeError, match=phrase) as info:
        f(a, b)
    assert isinstance(info.value, (mg.ShapeError, ValueError))  # a ValueError too, as NumPy raises


@needs_torch
def test_pytorch_raises_a_runtime_error_for_the_same_shapes():
    a, b = torch.ones(2, 3), torch.ones(4)
    for f in (lambda: a * b, lambda: a @ a, lambda: a.reshape(5), lambda: torch.cat([a, b]),
              lambda: b.add_(a)):
        with pytest.raises(RuntimeError):
            f()


# ------------------------------------------------------- in place on a read-only view

@pytest.mark.parametrize("write", [lambda e: e.add_(1.0), lambda e: e.fill_(0.0),
                                   lambda e: e.__setitem__(0, 5.0), lambda e: e.mul_(2.0)],
                         ids=["add_", "fill_", "setitem", "mul_"])
@pytest.mark.parametrize("grad", [False, True])
def test_an_in_place_change_of_an_expanded_view_names_the_op_and_says_clone(write, grad):
    """Before: NumPy's bare 'output array is read-only'. PyTorch refuses add_ and mul_ too."""
    a = Tensor(np.ones(3), requires_grad=grad)
    e = a.expand(2, 3)
    with pytest.raises(RuntimeError, match=r"this tensor \(shape \(2, 3\)\) is read-only: a broadcast "
                                           r"view .* Call clone\(\) first"):
        write(e)
    assert a.data.tolist() == [1.0, 1.0, 1.0]
    e.clone().add_(1.0)  # a tensor of its own can change


@needs_torch
def test_pytorch_refuses_an_in_place_change_of_an_expanded_view_too():
    """add_ and mul_ as minigrad does. PyTorch lets fill_ through (every element gets the same
    value, written into the base's memory); minigrad refuses it too, as it refuses every write."""
    base = torch.ones(3)
    e = base.expand(2, 3)
    for write in (lambda: e.add_(1.0), lambda: e.mul_(2.0)):
        with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
            write()
    e.fill_(0.0)
    assert base.tolist() == [0.0, 0.0, 0.0]
