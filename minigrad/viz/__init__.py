"""Pictures of graphs (Graphviz) and of training (matplotlib). Drawing never changes a graph."""

from .flow import plot_activation_scale, plot_grad_flow, plot_histograms, plot_update_ratios
from .graph import INSTALL_HINT, Graph, GraphvizNotFound, draw_graph, tensor_label
from .plots import plot_curves

__all__ = ["INSTALL_HINT", "Graph", "GraphvizNotFound", "draw_graph", "tensor_label",
           "plot_curves"]
__all__ += ["plot_grad_flow", "plot_activation_scale", "plot_histograms", "plot_update_ratios"]
