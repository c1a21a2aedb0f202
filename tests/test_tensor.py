"""Tensor: construction, fields, dtype, in-place ops and version counters."""

import numpy as np
import pytest

import minigrad as mg
from minigrad import Tensor


def test_fields_match_the_reading():
    x = Tensor([[1, 2]])
    assert x.data.dtype == np.float64 and x.shape == (1, 2)
    assert x.grad is None and x.requires_grad is False
    assert x.parents == () and x.op == "" and x.is_leaf


def test_ops_record_parents_in_operand_order():
    a, b = Tensor([1.0], requires_grad=True), Tensor([2.0])
    c = b * a
    assert c.parents == (b, a) and c.op == "mul" and c.requires_grad
    assert not c.is_leaf


def test_requires_grad_propagates_only_from_parents():
    a, b = Tensor([1.0]), Tensor([2.0])
    assert not (a + b).requires_grad
    assert (a + b).parents == ()  # nothing needs grad: nothing is recorded


def test_constructor_copies_the_data():
    arr = np.ones(3)
    t = Tensor(arr)
    arr[0] = 5
    assert t.data[0] == 1


def test_float32_stays_float32_through_ops_and_grads():
    w = Tensor(np.ones((3, 2)), requires_grad=True, dtype=np.float32)
    x = Tensor(np.ones((4, 3)), dtype=np.float32)
    loss = ((x @ w).relu() * 2.0 + 1).tanh().sum()
    loss.backward()
    assert loss.dtype == np.float32 and w.grad.dtype == np.float32


@pytest.mark.parametrize("bad", [["a", "b"], [object()], {"x": 1}, [1 + 2j]])
def test_non_numeric_data_is_a_type_error(bad):
    with pytest.raises(TypeError, match="Tensor: data must be numeric"):
        Tensor(bad)


def test_integer_dtype_is_refused():
    with pytest.raises(TypeError, match="floating"):
        Tensor([1, 2], dtype=np.int64)


def test_item_and_repr():
    t = Tensor(3.5, requires_grad=True, name="w")
    assert t.item() == 3.5
    assert "requires_grad=True" in repr(t) and "'w'" in repr(t)
    with pytest.raises(ValueError, match="one element"):
        Tensor([1.0, 2.0]).item()


def test_inplace_ops_bump_the_version_and_views_share_it():
    t = Tensor(np.arange(6.0))
    v = t.reshape(2, 3)
    assert t._version == 0
    t.add_(1.0)
    t.mul_(2.0)
    t[0] = 7.0
    assert t._version == 3 and v._version == 3
    assert v.data[0, 0] == 7.0  # a view shares memory


def test_inplace_on_a_recorded_tensor_is_refused_outside_no_grad():
    w = Tensor([1.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="add_: a leaf that requires grad"):
        w.add_(1.0)
    with mg.no_grad():
        w.add_(1.0)
    assert w.data[0] == 2.0


def test_detach_cuts_the_graph_but_shares_memory():
    w = Tensor([1.0, 2.0], requires_grad=True)
    d = (w * 2).detach()
    assert d.parents == () and not d.requires_grad


def test_pow_needs_a_real_number_or_a_tensor():
    for bad in ("2", 1j, [2.0], None):
        with pytest.raises(TypeError, match="pow: the exponent must be a real number"):
            Tensor([1.0]) ** bad


def test_truth_and_float_of_one_element_tensors():
    assert float(Tensor([[2.5]])) == 2.5 and bool(Tensor(1.0)) and not bool(Tensor(0.0))
    with pytest.raises(ValueError, match=r"shape \(2,\) is ambiguous"):
        bool(Tensor([1.0, 2.0]))


# --------------------------------------------------------- pickle and deepcopy

@pytest.mark.parametrize("how", ["pickle", "deepcopy"])
def test_a_leaf_after_backward_pickles_as_its_numbers_grad_and_flags(how):
    import copy
    import pickle

    w = Tensor([1.0, -2.0], requires_grad=True, name="w")
    (w * w).sum().backward()                      # w now refers to its AccumulateGrad node
    c = pickle.loads(pickle.dumps(w)) if how == "pickle" else copy.deepcopy(w)
    assert c is not w and c.data.tolist() == [1.0, -2.0] and c.grad.tolist() == [2.0, -4.0]
    assert c.requires_grad and c.name == "w" and c.is_leaf and c._version == 0
    assert not np.shares_memory(c.data, w.data)
    (c * 3.0).sum().backward()                    # the copy records and accumulates on its own
    assert c.grad.tolist() == [5.0, -1.0] and w.grad.tolist() == [2.0, -4.0]


@pytest.mark.parametrize("how", ["pickle", "deepcopy"])
def test_a_tensor_of_a_graph_refuses_to_be_pickled(how):
    import copy
    import pickle

    y = Tensor([1.0], requires_grad=True) * 2.0
    with pytest.raises(RuntimeError, match=r"only a leaf can be pickled or deep-copied; this tensor "
                                           r"\(shape \(1,\)\) was computed by 'mul'"):
        pickle.dumps(y) if how == "pickle" else copy.deepcopy(y)
    assert pickle.loads(pickle.dumps(y.detach())).data.tolist() == [2.0]


def test_a_deep_copy_made_while_a_graph_is_alive_gets_its_own_gradient():
    import copy

    w = Tensor([1.0], requires_grad=True)
    y = (w * 2).sum()                             # the graph holds w's AccumulateGrad node
    c = copy.deepcopy(w)
    (c * 3).sum().backward()                      # was: w.grad == [3.], c.grad None
    assert c.grad.tolist() == [3.0] and w.grad is None
    y.backward()
    assert w.grad.tolist() == [2.0] and c.grad.tolist() == [3.0]
