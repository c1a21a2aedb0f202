"""Q3: paths holds one gradient contribution per edge that leaves x."""
from otter.test_files import test_case

OK_FORMAT = False

name = "q3"
points = 1
all_or_nothing = True


@test_case(name="four_numbers", hidden=False)
def four_numbers(paths):
    assert paths is not None and len(paths) == 4, "one number per edge out of x: four"


@test_case(name="the_right_four", hidden=True)
def the_right_four(paths):
    import numpy as np

    assert np.allclose(sorted(paths), sorted([0.7, 0.7, 3.0, np.exp(0.7)]), rtol=0, atol=1e-12)
