"""Q2: reverse_topological(root) lists every node once, each consumer before the nodes it uses."""
from otter.test_files import test_case

OK_FORMAT = False

name = "q2"
points = 2
all_or_nothing = True


def _checks():
    """A fresh copy of the notebook's check module (a submission cannot swap its functions)."""
    import importlib

    return importlib.reload(importlib.import_module("minigrad.checks.nb15"))


@test_case(name="the_notebooks_check", hidden=False)
def the_notebooks_check(reverse_topological):
    _checks().check_reverse_topological(reverse_topological)
