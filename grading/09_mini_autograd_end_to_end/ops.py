"""The three ops of the mini autograd: matmul, ReLU, cross-entropy."""
from otter.test_files import test_case

OK_FORMAT = False

name = "ops"
points = 2
all_or_nothing = True


def _checks():
    """A fresh copy of the notebook's check module (a submission cannot swap its functions)."""
    import importlib

    return importlib.reload(importlib.import_module("minigrad.checks.nb09"))


@test_case(name="the_notebooks_check", hidden=False)
def the_notebooks_check(MyMatMul, MyReLU, MyCrossEntropy):
    _checks().check_ops(MyMatMul, MyReLU, MyCrossEntropy)


@test_case(name="other_arrays", hidden=True)
def other_arrays(MyMatMul, MyReLU, MyCrossEntropy):
    _checks().check_ops(MyMatMul, MyReLU, MyCrossEntropy, seed=909)
