"""Exercise 4: remove_dead_code(instrs, outputs), a dead-code pass over a compiled step's program."""
from otter.test_files import test_case

OK_FORMAT = False

name = "remove_dead_code"
points = 2
all_or_nothing = True


def _checks():
    """A fresh copy of the notebook's check module (a submission cannot swap its functions)."""
    import importlib

    return importlib.reload(importlib.import_module("minigrad.checks.nb13"))


@test_case(name="the_notebooks_check", hidden=False)
def the_notebooks_check(remove_dead_code):
    _checks().check_remove_dead_code(remove_dead_code)
