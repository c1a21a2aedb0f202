"""The mini autograd's backward loop, my_backward(root)."""
from otter.test_files import test_case

OK_FORMAT = False

name = "backward"
points = 2
all_or_nothing = True


def _checks():
    """A fresh copy of the notebook's check module (a submission cannot swap its functions)."""
    import importlib

    return importlib.reload(importlib.import_module("minigrad.checks.nb09"))


@test_case(name="the_notebooks_check", hidden=False)
def the_notebooks_check(my_backward):
    _checks().check_backward(my_backward)
