"""Exercise 1: reverse_topo_by_counting(root), a reverse topological order by counting edges."""
from otter.test_files import test_case

OK_FORMAT = False

name = "order"
points = 2
all_or_nothing = True


def _checks():
    """A fresh copy of the notebook's check module (a submission cannot swap its functions)."""
    import importlib

    return importlib.reload(importlib.import_module("minigrad.checks.nb03"))


@test_case(name="the_notebooks_check", hidden=False)
def the_notebooks_check(reverse_topo_by_counting):
    _checks().check_order(reverse_topo_by_counting)


@test_case(name="another_network", hidden=True)
def another_network(reverse_topo_by_counting):
    _checks().check_order(reverse_topo_by_counting, seed=30)
