"""Exercise 2: clip_by_global_norm."""
from otter.test_files import test_case

OK_FORMAT = False

name = "clip_by_global_norm"
points = 2
all_or_nothing = True


def _checks():
    """A fresh copy of the notebook's check module (a submission cannot swap its functions)."""
    import importlib

    return importlib.reload(importlib.import_module("minigrad.checks.nb10"))


@test_case(name="the_notebooks_check", hidden=False)
def the_notebooks_check(clip_by_global_norm):
    _checks().check_clip_by_global_norm(clip_by_global_norm)


@test_case(name="other_gradients", hidden=True)
def other_gradients(clip_by_global_norm):
    _checks().check_clip_by_global_norm(clip_by_global_norm, seed=1011)
