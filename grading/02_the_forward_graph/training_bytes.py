"""Exercise 1: predicted_training_bytes(batch, sizes), the bytes a training step keeps."""
from otter.test_files import test_case

OK_FORMAT = False

name = "training_bytes"
points = 2
all_or_nothing = True


def _checks():
    """A fresh copy of the notebook's check module (a submission cannot swap its functions)."""
    import importlib

    return importlib.reload(importlib.import_module("minigrad.checks.nb02"))


@test_case(name="the_notebooks_check", hidden=False)
def the_notebooks_check(predicted_training_bytes):
    _checks().check_training_bytes(predicted_training_bytes)


@test_case(name="other_networks", hidden=True)
def other_networks(predicted_training_bytes):
    cases = [(5, [32, 16, 4]), (3, [50, 7, 7, 2]), (17, [9, 30, 5])]
    _checks().check_training_bytes(predicted_training_bytes, cases)
