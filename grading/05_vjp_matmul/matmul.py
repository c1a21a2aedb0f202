"""Exercise: MyMatMul, matmul's forward and VJP."""
from otter.test_files import test_case

OK_FORMAT = False

name = "matmul"
points = 2
all_or_nothing = True


def _checks():
    """A fresh copy of the notebook's check module (a submission cannot swap its functions)."""
    import importlib

    return importlib.reload(importlib.import_module("minigrad.checks.nb05"))


@test_case(name="the_notebooks_check", hidden=False)
def the_notebooks_check(MyMatMul):
    _checks().check_matmul(MyMatMul)


@test_case(name="other_arrays", hidden=True)
def other_arrays(MyMatMul):
    _checks().check_matmul(MyMatMul, seed=5151)
