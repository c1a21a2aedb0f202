"""Pictures of graphs (Graphviz) and of training (matplotlib). Drawing never changes a graph.

Importing this package sets matplotlib's colour cycle to the colour-blind-safe
Okabe-Ito palette and its font sizes (see :mod:`minigrad.viz.style`).
"""

from . import style
from .classify import plot_confusion, plot_images
from .flow import plot_activation_scale, plot_grad_flow, plot_histograms, plot_update_ratios
from .graph import INSTALL_HINT, Graph, GraphvizNotFound, draw_graph, draw_static, tensor_label
from .jacobian import plot_jacobian, plot_scaling
from .memory import MEMORY_COLORS, plot_memory_timeline
from .plots import plot_curves
from .program import PHASE_COLORS, draw_program
from .saved import draw_fields, plot_saved
from .steps import BackwardSteps, Step, backward_steps
from .style import HATCHES, LINESTYLES, MARKERS, OKABE_ITO, distinguish, use_style

__all__ = ["INSTALL_HINT", "Graph", "GraphvizNotFound", "draw_graph", "draw_static", "tensor_label",
           "plot_curves", "plot_images", "plot_confusion", "draw_fields", "plot_saved",
           "plot_jacobian", "plot_scaling", "backward_steps", "BackwardSteps", "Step",
           "plot_grad_flow", "plot_activation_scale", "plot_histograms", "plot_update_ratios",
           "plot_memory_timeline", "MEMORY_COLORS", "draw_program", "PHASE_COLORS", "style",
           "use_style", "distinguish", "OKABE_ITO",
           "LINESTYLES",
           "MARKERS", "HATCHES"]

use_style()
