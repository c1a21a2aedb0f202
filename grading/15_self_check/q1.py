"""Q1: recorded_ops(root) lists the op names of root's graph, once each, sorted."""
from otter.test_files import test_case

OK_FORMAT = False

name = "q1"
points = 2
all_or_nothing = True


def _checks():
    """A fresh copy of the notebook's check module (a submission cannot swap its functions)."""
    import importlib

    return importlib.reload(importlib.import_module("minigrad.checks.nb15"))


@test_case(name="the_notebooks_check", hidden=False)
def the_notebooks_check(recorded_ops):
    _checks().check_recorded_ops(recorded_ops)
