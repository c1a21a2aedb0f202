"""Q4: the four VJPs, against the engine."""
from otter.test_files import test_case

OK_FORMAT = False

name = "q4"
points = 4
all_or_nothing = True


def _checks():
    """A fresh copy of the notebook's check module (a submission cannot swap its functions)."""
    import importlib

    return importlib.reload(importlib.import_module("minigrad.checks.nb15"))


@test_case(name="the_notebooks_check", hidden=False)
def the_notebooks_check(vjp_matmul, vjp_relu, vjp_softmax, vjp_cross_entropy):
    _checks().check_vjps(vjp_matmul, vjp_relu, vjp_softmax, vjp_cross_entropy)


@test_case(name="other_arrays", hidden=True)
def other_arrays(vjp_matmul, vjp_relu, vjp_softmax, vjp_cross_entropy):
    _checks().check_vjps(vjp_matmul, vjp_relu, vjp_softmax, vjp_cross_entropy, seed=2315)
