"""Pictures of graphs (Graphviz) and of training (matplotlib). Drawing never changes a graph."""

from .graph import INSTALL_HINT, Graph, GraphvizNotFound, draw_graph, tensor_label
from .plots import plot_curves
from .steps import BackwardSteps, Step, backward_steps

__all__ = ["INSTALL_HINT", "Graph", "GraphvizNotFound", "draw_graph", "tensor_label",
           "plot_curves"]
__all__ += ["backward_steps", "BackwardSteps", "Step"]
