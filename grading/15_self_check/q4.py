"""Q4: the four VJPs, against the engine on shapes the notebook does not use."""
from otter.test_files import test_case

OK_FORMAT = False

name = "q4"
points = 4
all_or_nothing = True


@test_case(name="matmul_shapes", hidden=False)
def matmul_shapes(vjp_matmul):
    import numpy as np

    da, db = vjp_matmul(np.ones((2, 3)), np.ones((3, 4)), np.ones((2, 4)))
    assert np.shape(da) == (2, 3) and np.shape(db) == (3, 4)


@test_case(name="all_four_against_the_engine", hidden=True)
def all_four_against_the_engine(vjp_matmul, vjp_relu, vjp_softmax, vjp_cross_entropy):
    import numpy as np

    import minigrad as mg
    from minigrad import Tensor

    rng = np.random.default_rng(2315)
    A, B, G = rng.standard_normal((6, 2)), rng.standard_normal((2, 7)), rng.standard_normal((6, 7))
    At, Bt = Tensor(A, requires_grad=True), Tensor(B, requires_grad=True)
    ref = mg.grad(At @ Bt, [At, Bt], grad_output=G)
    mine = vjp_matmul(A, B, G)
    assert all(np.allclose(m, r.data, atol=1e-12) for m, r in zip(mine, ref)), "matmul"
    z, g = rng.standard_normal((3, 9)), rng.standard_normal((3, 9))
    zt = Tensor(z, requires_grad=True)
    assert np.allclose(vjp_relu(z, g), mg.grad(zt.relu(), zt, grad_output=g)[0].data, atol=1e-12), "relu"
    s = zt.softmax(axis=1)
    assert np.allclose(vjp_softmax(s.data, g), mg.grad(s, zt, grad_output=g)[0].data, atol=1e-12), "softmax"
    pt = Tensor(s.data, requires_grad=True)
    y = np.array([8, 0, 4])
    ref_ce = mg.grad(pt.cross_entropy(y), pt, grad_output=np.array(0.7))[0].data
    assert np.allclose(vjp_cross_entropy(s.data, y, 0.7), ref_ce, atol=1e-12), "cross-entropy"
