"""``keras.utils.model_to_dot`` and ``keras.utils.plot_model``: a model's layers as a graph.

:func:`model_to_dot` gives a :class:`Dot` graph in Graphviz's DOT language, built here (no
pydot needed), with Keras 3's node labels (the layer's name and class; with the options, its
activation, input and output shapes, output dtype, trainable flag) and Keras' edges: a
Sequential as a chain, a functional model along its graph, a subclassed model as one box,
nested models as dashed clusters with ``expand_nested``. :func:`plot_model` writes the graph:
``.dot`` / ``.gv`` as DOT text; an image (png, svg, pdf, jpg ...) through Graphviz's ``dot``
program when it is installed, else drawn with matplotlib (layers ranked by depth, arrows
between them), so a plot needs no system package.
"""
from __future__ import annotations

import html
import os
import shutil
import subprocess

__all__ = ["Dot", "model_to_dot", "plot_model"]


def _quote(value) -> str:
    s = str(value)
    if s.startswith("<") and s.endswith(">"):
        return s                                   # an HTML-like label
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _attrs(attrs: dict) -> str:
    if not attrs:
        return ""
    return " [" + ", ".join(f"{k}={_quote(v)}" for k, v in attrs.items()) + "]"


class Dot:
    """A DOT graph (the part of ``pydot.Dot``'s API Keras' users reach for): nodes, edges,
    clusters and attributes; :meth:`to_string` gives the DOT source, :meth:`create` and
    :meth:`write` run Graphviz on it."""

    def __init__(self, graph_name="G", graph_type="digraph", cluster=False):
        self.graph_name = graph_name
        self.graph_type = graph_type
        self.cluster = cluster
        self.attributes: dict = {}
        self.node_defaults: dict = {}
        self._nodes: dict = {}                      # name -> (attrs, {lines for the plot})
        self._edges: dict = {}                      # (src, dst) -> attrs
        self._subgraphs: list = []

    # --- building ----------------------------------------------------------------------------
    def set(self, key, value):
        self.attributes[key] = value

    def get(self, key):
        return self.attributes.get(key)

    def set_node_defaults(self, **attrs):
        self.node_defaults.update(attrs)

    def add_node(self, name, info=None, **attrs):
        self._nodes[str(name)] = (attrs, info or {})

    def add_edge(self, src, dst, **attrs):
        self._edges[(str(src), str(dst))] = attrs

    def add_subgraph(self, graph):
        self._subgraphs.append(graph)

    # --- reading -----------------------------------------------------------------------------
    def get_nodes(self) -> list:
        """The names of this graph's own nodes (not its clusters')."""
        return list(self._nodes)

    def get_node(self, name):
        """A node's attributes (an empty list when absent, as pydot's)."""
        hit = self._nodes.get(str(name))
        return [hit[0]] if hit is not None else []

    def get_edges(self) -> list:
        return list(self._edges)

    def get_edge(self, src, dst):
        hit = self._edges.get((str(src), str(dst)))
        return [hit] if hit is not None else []

    def get_subgraphs(self) -> list:
        return list(self._subgraphs)

    def _all(self):
        """Every node and edge, clusters included: ``(nodes, edges)``."""
        nodes, edges = dict(self._nodes), dict(self._edges)
        for sub in self._subgraphs:
            n, e = sub._all()
            nodes.update(n)
            edges.update(e)
        return nodes, edges

    # --- output ------------------------------------------------------------------------------
    def to_string(self, indent="") -> str:
        head = (f"subgraph {_quote('cluster_' + self.graph_name)}" if self.cluster
                else f"{self.graph_type} {_quote(self.graph_name)}")
        lines = [f"{indent}{head} {{"]
        inner = indent + "    "
        for k, v in self.attributes.items():
            lines.append(f"{inner}{k}={_quote(v)};")
        if self.node_defaults:
            lines.append(f"{inner}node{_attrs(self.node_defaults)};")
        for name, (attrs, _) in self._nodes.items():
            lines.append(f"{inner}{_quote(name)}{_attrs(attrs)};")
        for sub in self._subgraphs:
            lines.append(sub.to_string(inner))
        arrow = "->" if self.graph_type == "digraph" else "--"
        for (src, dst), attrs in self._edges.items():
            lines.append(f"{inner}{_quote(src)} {arrow} {_quote(dst)}{_attrs(attrs)};")
        lines.append(f"{indent}}}")
        return "\n".join(lines) + ("\n" if not indent else "")

    __str__ = to_string

    def create(self, prog="dot", format="png"):  # noqa: A002 (pydot's name)
        """The graph rendered by Graphviz's ``prog`` in ``format``, as bytes."""
        exe = shutil.which(prog)
        if exe is None:
            raise ImportError(f"Dot.create: Graphviz's `{prog}` program is not installed "
                              "(see https://graphviz.org/download/); plot_model draws with "
                              "matplotlib without it")
        run = subprocess.run([exe, f"-T{format}"], input=self.to_string().encode(),
                             capture_output=True, check=False)
        if run.returncode != 0:
            raise RuntimeError(f"Dot.create: `{prog} -T{format}` failed: "
                               f"{run.stderr.decode(errors='replace').strip()}")
        return run.stdout

    def write(self, path, prog="dot", format="raw"):  # noqa: A002 (pydot's name)
        """Write the DOT source (``format="raw"``, ``"dot"``) or Graphviz's rendering."""
        data = (self.to_string().encode() if format in ("raw", "dot", "gv")
                else self.create(prog, format))
        with open(path, "wb") as f:
            f.write(data)
        return True


# --- what a node shows -----------------------------------------------------------------------

def _activation_name(layer):
    act = layer.activation
    name = getattr(act, "name", None) or getattr(act, "__name__", None)
    return name if isinstance(name, str) else str(act)


def _fmt_shape(shape):
    if shape is None:
        return "?"
    if isinstance(shape, dict):
        return ", ".join(f"{k}: {v}" for k, v in shape.items())
    return str(shape)


def _nodes_of(model):
    """``{id(layer): graph node}`` of the model's first call of each layer."""
    found = {}
    graph = model.__dict__.get("_graph")
    if graph is not None:
        for node in graph.nodes:
            found.setdefault(id(node.layer), node)
    for layer, node in model.__dict__.get("_build_nodes", ()):
        found.setdefault(id(layer), node)
    return found


def _io(layer, node):
    """``(input shape, output shape, output dtype)`` of a layer, ``None`` where unknown."""
    from .layers import InputLayer
    if isinstance(layer, InputLayer):
        shape = tuple(layer._build_input_shape) if layer._build_input_shape else None
        dtype = layer.__dict__.get("_input_dtype")
        return None, shape, None if dtype is None else str(dtype)
    if node is None:
        return None, None, None

    def one(ts):
        shapes = [tuple(t.shape) for t in ts]
        return shapes[0] if len(shapes) == 1 else shapes
    outs = list(node.outputs or [])
    dtype = None
    if outs:
        dts = [getattr(getattr(t, "dtype", None), "name", None) or "?" for t in outs]
        dtype = dts[0] if len(dts) == 1 else dts
    return (one(node.symbols) if node.symbols else None,
            one(outs) if outs else None, dtype)


def _info(layer, node, show_shapes, show_dtype, show_layer_names, show_layer_activations,
          show_trainable):
    cls = type(layer).__name__
    info = {"title": f"{layer.name} ({cls})" if show_layer_names else cls, "rows": []}
    if show_layer_activations and getattr(layer, "activation", None) is not None:
        info["rows"].append(("Activation", _activation_name(layer)))
    in_shape, out_shape, dtype = _io(layer, node)
    if show_shapes:
        if cls != "InputLayer":
            info["rows"].append(("Input shape", _fmt_shape(in_shape)))
        info["rows"].append(("Output shape", _fmt_shape(out_shape)))
    if show_dtype:
        info["rows"].append(("Output dtype", dtype or "?"))
    if show_trainable and getattr(layer, "weights", None):
        info["trainable"] = bool(layer.trainable)
    return info


def _label(info) -> str:
    """Keras 3's HTML-like table label."""
    cells = [f'<td bgcolor="white"><font point-size="14">{html.escape(k)}: '
             f'<b>{html.escape(str(v))}</b></font></td>'
             for k, v in info["rows"] if k != "Activation"]
    if "trainable" in info:
        cells.append('<td bgcolor="forestgreen"><font point-size="14" color="white"><b>'
                     'Trainable</b></font></td>' if info["trainable"] else
                     '<td bgcolor="firebrick"><font point-size="14" color="white"><b>'
                     'Non-trainable</b></font></td>')
    span = max(1, len(cells))
    title = info["title"]
    if " (" in title:
        name, cls = title.split(" (", 1)
        title = f"<b>{html.escape(name)}</b> ({html.escape(cls[:-1])})"
    else:
        title = f"<b>{html.escape(title)}</b>"
    out = ('<<table border="0" cellborder="1" bgcolor="black" cellpadding="10">'
           f'<tr><td colspan="{span}" bgcolor="black"><font point-size="16" color="white">'
           f'{title}</font></td></tr>')
    for k, v in info["rows"]:
        if k == "Activation":
            out += (f'<tr><td bgcolor="white" colspan="{span}"><font point-size="14">'
                    f'Activation: <b>{html.escape(str(v))}</b></font></td></tr>')
    if cells:
        out += "<tr>" + "".join(cells) + "</tr>"
    return out + "</table>>"


# --- the graph -------------------------------------------------------------------------------

def _is_container(layer):
    from .layers import Model
    return isinstance(layer, Model) and (layer.__dict__.get("_graph") is not None or
                                         _is_sequential(layer))


def _is_sequential(model):
    from .layers import Sequential
    return isinstance(model, Sequential)


def _first_box(layer):
    """The box an edge into a nested model points at."""
    while _is_container(layer):
        if _is_sequential(layer):
            layer = layer.layers[0]
        else:
            layer = layer._graph.input_layers[0] if hasattr(layer._graph, "input_layers") \
                else layer._graph.layers[0]
    return layer


def _last_box(layer):
    """The box an edge out of a nested model starts from."""
    while _is_container(layer):
        if _is_sequential(layer):
            layer = layer.layers[-1]
        else:
            layer = layer._graph.nodes[-1].layer
    return layer


def _source(t):
    """The layer that made the symbolic tensor ``t``."""
    node = getattr(t, "node", None)
    if node is not None:
        return node.layer
    return getattr(t, "_input_layer", None)


def model_to_dot(model, show_shapes=False, show_dtype=False, show_layer_names=True,
                 rankdir="TB", expand_nested=False, dpi=200, subgraph=False,
                 show_layer_activations=False, show_trainable=False, splines="ortho",
                 **kwargs):
    """The model as a :class:`Dot` graph (Keras' ``keras.utils.model_to_dot``)."""
    from .layers import Model
    if kwargs.pop("layer_range", None) is not None:
        raise ValueError("Argument `layer_range` is no longer supported.")
    if kwargs:
        raise ValueError(f"Unrecognized keyword arguments: {kwargs}")
    if not isinstance(model, Model):
        raise TypeError(f"model_to_dot: expected a keras Model, got {type(model).__name__}")
    if not model.built:
        raise ValueError("This model has not yet been built. Build the model first by "
                         "calling `build()` or by calling the model on a batch of data.")
    opts = (show_shapes, show_dtype, show_layer_names, show_layer_activations, show_trainable)
    if subgraph:
        dot = Dot(model.name, cluster=True)
        dot.set("style", "dashed")
        dot.set("label", model.name)
        dot.set("labeljust", "l")
    else:
        dot = Dot(model.name)
        dot.set("rankdir", rankdir)
        dot.set("concentrate", "true")
        dot.set("dpi", dpi)
        dot.set("splines", splines)
        dot.set_node_defaults(shape="record")
    sequential = _is_sequential(model)
    graph = model.__dict__.get("_graph")
    if sequential:
        layers = list(model.layers)
    elif graph is not None:
        layers = list(graph.layers)
    else:
        layers = [model]                         # a subclassed model: one box
    nodes = _nodes_of(model)
    for layer in layers:
        if expand_nested and _is_container(layer) and layer is not model:
            dot.add_subgraph(model_to_dot(
                layer, show_shapes, show_dtype, show_layer_names, rankdir, expand_nested,
                subgraph=True, show_layer_activations=show_layer_activations,
                show_trainable=show_trainable))
            continue
        info = _info(layer, nodes.get(id(layer)), *opts)
        dot.add_node(id(layer), info, label=_label(info), fontname="Helvetica", border="0",
                     margin="0")

    def edge(src, dst):
        if expand_nested:
            src, dst = _last_box(src), _first_box(dst)
        if not dot.get_edge(id(src), id(dst)):
            dot.add_edge(id(src), id(dst), penwidth="2")

    if sequential:
        for a, b in zip(layers, layers[1:]):
            edge(a, b)
    elif graph is not None:
        for node in graph.nodes:
            for t in node.symbols:
                src = _source(t)
                if src is not None:
                    edge(src, node.layer)
    return dot


# --- drawing without Graphviz ----------------------------------------------------------------

def _ranks(nodes, edges):
    """Each node's depth: the longest path from a source."""
    preds = {n: [] for n in nodes}
    for s, d in edges:
        if s in preds and d in preds:
            preds[d].append(s)
    depth = {}

    def of(n, seen=()):
        if n not in depth:
            depth[n] = 0 if not preds[n] or n in seen else \
                1 + max(of(p, seen + (n,)) for p in preds[n])
        return depth[n]
    for n in nodes:
        of(n)
    return depth


def _draw(dot: Dot, path: str, fmt: str, dpi):
    try:
        import matplotlib
        matplotlib.use("Agg", force=False)
        import matplotlib.pyplot as plt
        from matplotlib.patches import FancyBboxPatch
    except ImportError:
        raise ImportError("plot_model: drawing an image needs Graphviz's `dot` program "
                          "(https://graphviz.org/download/) or matplotlib (`pip install "
                          "matplotlib`); a .dot file needs neither") from None
    nodes, edges = dot._all()
    depth = _ranks(list(nodes), list(edges))
    by_rank: dict = {}
    for n in nodes:
        by_rank.setdefault(depth[n], []).append(n)
    horizontal = dot.get("rankdir") == "LR"
    texts = {}
    for n, (_, info) in nodes.items():
        lines = [info.get("title", n)] + [f"{k}: {v}" for k, v in info.get("rows", ())]
        if "trainable" in info:
            lines.append("Trainable" if info["trainable"] else "Non-trainable")
        texts[n] = lines
    box_w = max(max(len(x) for x in t) for t in texts.values()) * 0.11 + 0.6
    box_h = max(len(t) for t in texts.values()) * 0.28 + 0.3
    gap_rank, gap_node = (box_w + 1.0, box_h + 0.5) if horizontal else (box_h + 0.8,
                                                                          box_w + 0.4)
    pos = {}
    for r, members in by_rank.items():
        for i, n in enumerate(members):
            across = (i - (len(members) - 1) / 2) * gap_node
            pos[n] = (r * gap_rank, -across) if horizontal else (across, -r * gap_rank)
    xs = [p[0] for p in pos.values()]
    ys = [p[1] for p in pos.values()]
    fig_w = (max(xs) - min(xs)) + box_w + 1
    fig_h = (max(ys) - min(ys)) + box_h + 1
    fig, ax = plt.subplots(figsize=(max(fig_w, 2), max(fig_h, 1.5)))
    for (s, d) in edges:                        # from box edge to box edge
        if s in pos and d in pos:
            (xs_, ys_), (xd, yd) = pos[s], pos[d]
            if horizontal:
                start, end = (xs_ + box_w / 2, ys_), (xd - box_w / 2, yd)
            else:
                start, end = (xs_, ys_ - box_h / 2), (xd, yd + box_h / 2)
            ax.annotate("", xy=end, xytext=start,
                        arrowprops=dict(arrowstyle="-|>", lw=1.5, color="black",
                                        shrinkA=2, shrinkB=2))
    for n, (x, y) in pos.items():
        ax.add_patch(FancyBboxPatch((x - box_w / 2, y - box_h / 2), box_w, box_h,
                                    boxstyle="round,pad=0.05", fc="white", ec="black"))
        lines = texts[n]
        ax.text(x, y + box_h / 2 - 0.25, lines[0], ha="center", va="center",
                fontsize=10, fontweight="bold", family="sans-serif")
        for j, line in enumerate(lines[1:]):
            ax.text(x, y + box_h / 2 - 0.55 - 0.28 * j, line, ha="center", va="center",
                    fontsize=8.5, family="sans-serif")
    ax.set_xlim(min(xs) - box_w / 2 - 0.5, max(xs) + box_w / 2 + 0.5)
    ax.set_ylim(min(ys) - box_h / 2 - 0.5, max(ys) + box_h / 2 + 0.5)
    ax.set_aspect("equal")
    ax.axis("off")
    fig.savefig(path, format=fmt, dpi=min(int(dpi or 100), 200), bbox_inches="tight")
    plt.close(fig)


def plot_model(model, to_file="model.png", show_shapes=False, show_dtype=False,
               show_layer_names=False, rankdir="TB", expand_nested=False, dpi=200,
               show_layer_activations=False, show_trainable=False, splines="ortho", **kwargs):
    """Write the model's graph to ``to_file`` (Keras' ``keras.utils.plot_model``): DOT text
    for ``.dot`` / ``.gv``, else an image in the file's format (png without one), rendered
    by Graphviz when its ``dot`` program is installed and by matplotlib otherwise. Returns
    an ``IPython.display.Image`` of it when IPython is installed (not for pdf)."""
    if kwargs.pop("layer_range", None) is not None:
        raise ValueError("Argument `layer_range` is no longer supported.")
    if kwargs:
        raise ValueError(f"Unrecognized keyword arguments: {kwargs}")
    dot = model_to_dot(model, show_shapes=show_shapes, show_dtype=show_dtype,
                       show_layer_names=show_layer_names, rankdir=rankdir,
                       expand_nested=expand_nested, dpi=dpi,
                       show_layer_activations=show_layer_activations,
                       show_trainable=show_trainable, splines=splines)
    to_file = os.fspath(to_file)
    ext = os.path.splitext(to_file)[1][1:].lower() or "png"
    if ext in ("dot", "gv", "raw"):
        dot.write(to_file, format="raw")
    elif shutil.which("dot") is not None:
        dot.write(to_file, format=ext)
    else:
        _draw(dot, to_file, "jpeg" if ext == "jpg" else ext, dpi)
    if ext not in ("pdf", "dot", "gv", "raw"):
        try:
            from IPython import display
        except ImportError:
            return None
        return display.Image(filename=to_file)
    return None
