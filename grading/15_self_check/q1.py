"""Q1: recorded_ops(root) lists the op names of root's graph, once each, sorted."""
from otter.test_files import test_case

OK_FORMAT = False

name = "q1"
points = 2
all_or_nothing = True


@test_case(name="returns_sorted_names", hidden=False)
def returns_sorted_names(recorded_ops):
    from minigrad import Tensor

    x = Tensor([1.0, -2.0], requires_grad=True)
    got = recorded_ops((x * 2.0).relu().sum())
    assert got == ["mul", "relu", "sum"], f"recorded_ops gives {got} for (x * 2).relu().sum()"


@test_case(name="a_new_graph_with_shared_nodes_and_depth", hidden=True)
def a_new_graph_with_shared_nodes_and_depth(recorded_ops):
    import sys

    from minigrad import Tensor

    x = Tensor([0.3, 0.4], requires_grad=True)
    w = Tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    h = (x @ w).exp()
    got = recorded_ops((h * h - h.tanh()).sum())
    assert got == sorted(["matmul", "exp", "mul", "tanh", "sub", "sum"]) or \
        got == sorted(["matmul", "exp", "mul", "tanh", "add", "neg", "sum"]), got
    deep = x
    for _ in range(3000):
        deep = deep.sigmoid() if hasattr(deep, "sigmoid") else deep.tanh()
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(1000)
    try:
        names = recorded_ops(deep.sum())
    finally:
        sys.setrecursionlimit(limit)
    assert len(names) == 2 and "sum" in names, names
