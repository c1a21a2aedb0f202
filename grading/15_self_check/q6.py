"""Q6: saved_activation_bytes(root), the bytes a graph keeps for backward."""
from otter.test_files import test_case

OK_FORMAT = False

name = "q6"
points = 2
all_or_nothing = True


def _checks():
    """A fresh copy of the notebook's check module (a submission cannot swap its functions)."""
    import importlib

    return importlib.reload(importlib.import_module("minigrad.checks.nb15"))


@test_case(name="the_notebooks_check", hidden=False)
def the_notebooks_check(saved_activation_bytes):
    _checks().check_saved_activation_bytes(saved_activation_bytes)


@test_case(name="other_data", hidden=True)
def other_data(saved_activation_bytes):
    _checks().check_saved_activation_bytes(saved_activation_bytes, seed=66)
