"""Pictures of graphs (Graphviz) and of training (matplotlib). Drawing never changes a graph."""

from .graph import INSTALL_HINT, Graph, GraphvizNotFound, draw_graph, tensor_label
from .memory import MEMORY_COLORS, plot_memory_timeline
from .plots import plot_curves

__all__ = ["INSTALL_HINT", "Graph", "GraphvizNotFound", "draw_graph", "tensor_label",
           "plot_curves", "plot_memory_timeline", "MEMORY_COLORS"]
