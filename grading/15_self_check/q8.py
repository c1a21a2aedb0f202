"""Q8: compiled(x) traces once per branch and replays the right graph."""
from otter.test_files import test_case

OK_FORMAT = False

name = "q8"
points = 2
all_or_nothing = True


@test_case(name="replays_both_branches", hidden=False)
def replays_both_branches(compiled, signed):
    import numpy as np

    from minigrad import Tensor

    for v in (np.array([2.0, 1.0]), np.array([-3.0, 1.0])):
        assert np.allclose(compiled(v).data, signed(Tensor(v)).data)


@test_case(name="keyed_on_the_condition_itself", hidden=True)
def keyed_on_the_condition_itself(compiled, signed, cache, traces):
    import numpy as np

    from minigrad import Tensor

    for v in (np.array([4.0, -6.0]), np.array([0.25, -0.25]), np.array([-1.0, 3.0]), np.array([0.0, 0.0])):
        assert np.allclose(compiled(v).data, signed(Tensor(v)).data), v
    assert traces["n"] == len(cache) == 2
