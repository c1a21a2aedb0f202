"""Exercise 2: predict_saved_bytes(batch, width, hidden, classes, itemsize)."""
from otter.test_files import test_case

OK_FORMAT = False

name = "saved_bytes"
points = 2
all_or_nothing = True


def _checks():
    """A fresh copy of the notebook's check module (a submission cannot swap its functions)."""
    import importlib

    return importlib.reload(importlib.import_module("minigrad.checks.nb11"))


@test_case(name="the_notebooks_check", hidden=False)
def the_notebooks_check(predict_saved_bytes):
    _checks().check_predict_saved_bytes(predict_saved_bytes)


@test_case(name="other_shapes", hidden=True)
def other_shapes(predict_saved_bytes):
    shapes = [dict(batch=17, width=40, hidden=4, classes=6), dict(batch=5, width=24, hidden=1, classes=3)]
    _checks().check_predict_saved_bytes(predict_saved_bytes, shapes)
