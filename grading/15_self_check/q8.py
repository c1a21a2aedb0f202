"""Q8: compiled(x) traces once per branch and replays the right graph."""
from otter.test_files import test_case

OK_FORMAT = False

name = "q8"
points = 2
all_or_nothing = True


def _checks():
    """A fresh copy of the notebook's check module (a submission cannot swap its functions)."""
    import importlib

    return importlib.reload(importlib.import_module("minigrad.checks.nb15"))


@test_case(name="the_notebooks_check", hidden=False)
def the_notebooks_check(compiled, cache, traces, signed):
    _checks().check_guard(compiled, cache, traces, signed)
