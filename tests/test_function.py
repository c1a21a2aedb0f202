"""Context: what it counts as saved, and that release frees all of it."""

import numpy as np

from minigrad import Tensor


def test_saved_nbytes_counts_index_arrays_kept_in_a_tuple():
    p = Tensor(np.full((4, 3), 1 / 3), requires_grad=True)
    loss = p.cross_entropy(np.array([0, 1, 2, 0]))
    ctx = loss.grad_fn
    rows, target = ctx.idx
    assert ctx.saved_nbytes() == p.data.nbytes + rows.nbytes + target.nbytes


def test_release_drops_array_attributes_and_keeps_the_rest():
    p = Tensor(np.full((4, 3), 1 / 3), requires_grad=True)
    loss = p.cross_entropy(np.array([0, 1, 2, 0]))
    ctx = loss.grad_fn
    loss.backward()
    assert ctx.released and ctx.idx is None and ctx.saved_nbytes() == 0
    assert ctx.needs_input_grad == (True,)
    np.testing.assert_allclose(p.grad[[0, 1, 2, 3], [0, 1, 2, 0]], -1 / (4 * (1 / 3)))
