"""Pictures of graphs (Graphviz) and of training (matplotlib). Drawing never changes a graph."""

from .graph import INSTALL_HINT, Graph, GraphvizNotFound, draw_graph, tensor_label
from .plots import plot_curves

__all__ = ["INSTALL_HINT", "Graph", "GraphvizNotFound", "draw_graph", "tensor_label",
           "plot_curves"]

from .saved import draw_fields, plot_saved  # noqa: E402  (what a graph keeps for backward)

__all__ += ["draw_fields", "plot_saved"]
