"""Q2: reverse_topological(root) lists every node once, each consumer before the nodes it uses."""
from otter.test_files import test_case

OK_FORMAT = False

name = "q2"
points = 2
all_or_nothing = True


def _problem(order, root):
    import minigrad as mg

    expected = mg.topological_order(root)
    if len({id(n) for n in order}) != len(order) or {id(n) for n in order} != {id(n) for n in expected}:
        return "not every node exactly once"
    if order[0] is not root.grad_fn:
        return "does not start at root.grad_fn"
    position = {id(n): i for i, n in enumerate(order)}
    for n in order:
        for p in n.parents:
            if p is not None and position[id(p)] < position[id(n)]:
                return f"{p.name} before its consumer {n.name}"
    return None


@test_case(name="a_diamond", hidden=False)
def a_diamond(reverse_topological):
    from minigrad import Tensor

    x = Tensor(0.5, requires_grad=True)
    a = x * 3.0
    root = a + a * a
    assert _problem(reverse_topological(root), root) is None


@test_case(name="longer_and_wider_graphs", hidden=True)
def longer_and_wider_graphs(reverse_topological):
    import numpy as np

    from minigrad import Tensor

    x = Tensor(np.array([0.1, 0.2]), requires_grad=True)
    y = Tensor(np.array([0.3, -0.4]), requires_grad=True)
    a = (x * y).exp()
    b = a.tanh() * a + y
    root = (b * a + b.exp().exp() + x).sum()
    assert _problem(reverse_topological(root), root) is None
    deep = x
    for _ in range(2000):
        deep = deep.tanh() + deep
    root = deep.sum()
    assert _problem(reverse_topological(root), root) is None
