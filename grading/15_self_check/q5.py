"""Q5: J_reverse, the Jacobian row by row from backward passes."""
from otter.test_files import test_case

OK_FORMAT = False

name = "q5"
points = 2
all_or_nothing = True


@test_case(name="shape", hidden=False)
def shape(J_reverse):
    import numpy as np

    assert np.shape(J_reverse) == (2, 6)


@test_case(name="values_and_passes", hidden=True)
def values_and_passes(J_reverse, reverse_calls, Wj, xj):
    import numpy as np

    want = (1 - np.tanh(Wj @ xj) ** 2)[:, None] * Wj
    assert np.allclose(J_reverse, want, atol=1e-10)
    assert reverse_calls == 2
