"""Q3: paths holds one gradient contribution per edge that leaves x."""
from otter.test_files import test_case

OK_FORMAT = False

name = "q3"
points = 1
all_or_nothing = True


def _checks():
    """A fresh copy of the notebook's check module (a submission cannot swap its functions)."""
    import importlib

    return importlib.reload(importlib.import_module("minigrad.checks.nb15"))


@test_case(name="the_notebooks_check", hidden=False)
def the_notebooks_check(paths):
    _checks().check_paths(paths)
