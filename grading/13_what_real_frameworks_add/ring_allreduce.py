"""Exercise 3: ring_allreduce(vectors)."""
from otter.test_files import test_case

OK_FORMAT = False

name = "ring_allreduce"
points = 2
all_or_nothing = True


def _checks():
    """A fresh copy of the notebook's check module (a submission cannot swap its functions)."""
    import importlib

    return importlib.reload(importlib.import_module("minigrad.checks.nb13"))


@test_case(name="the_notebooks_check", hidden=False)
def the_notebooks_check(ring_allreduce, local):
    _checks().check_ring_allreduce(ring_allreduce, local)


@test_case(name="other_vectors", hidden=True)
def other_vectors(ring_allreduce):
    import numpy as np

    rng = np.random.default_rng(1313)
    _checks().check_ring_allreduce(ring_allreduce, [rng.standard_normal(13) for _ in range(6)])
