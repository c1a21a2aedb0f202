"""Exercise: two_segment_grads(first, second, x), backpropagation through two checkpointed halves."""
from otter.test_files import test_case

OK_FORMAT = False

name = "two_segment_grads"
points = 2
all_or_nothing = True


def _checks():
    """A fresh copy of the notebook's check module (a submission cannot swap its functions)."""
    import importlib

    return importlib.reload(importlib.import_module("minigrad.checks.nb12"))


@test_case(name="the_notebooks_check", hidden=False)
def the_notebooks_check(two_segment_grads, first, second, x):
    _checks().check_two_segment_grads(two_segment_grads, first, second, x)


@test_case(name="another_input", hidden=True)
def another_input(two_segment_grads, first, second, x):
    import numpy as np

    from minigrad import Tensor

    other = np.random.default_rng(1212).standard_normal(x.shape)
    _checks().check_two_segment_grads(two_segment_grads, first, second,
                                      Tensor(other, requires_grad=x.requires_grad))
