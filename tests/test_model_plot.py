"""keras.utils.model_to_dot / plot_model: the graph's boxes and edges for Sequential,
functional, nested and subclassed models, Keras 3's labels, the DOT text, and images drawn
without Graphviz (matplotlib)."""
from __future__ import annotations

import pytest

import gradtape as gt

K = gt.keras


def _two_input():
    a = K.Input((4,), name="a")
    b = K.Input((3,), name="b")
    x = K.layers.Dense(5, activation="relu", name="d1")(a)
    y = K.layers.Dense(5, name="d2")(b)
    z = K.layers.Add(name="add")([x, y])
    return K.Model([a, b], K.layers.Dense(1, name="out")(z), name="two")


def _names(model):
    return {str(id(layer)): layer.name for layer in model.layers}


def test_functional_graph_edges_and_labels():
    m = _two_input()
    dot = K.utils.model_to_dot(m, show_shapes=True, show_dtype=True,
                               show_layer_activations=True, show_trainable=True)
    names = _names(m)
    assert sorted(names[n] for n in dot.get_nodes()) == ["a", "add", "b", "d1", "d2", "out"]
    edges = sorted((names[s], names[d]) for s, d in dot.get_edges())
    assert edges == [("a", "d1"), ("add", "out"), ("b", "d2"), ("d1", "add"), ("d2", "add")]
    text = dot.to_string()
    assert text.startswith('digraph "two" {') and 'rankdir="TB";' in text
    assert 'splines="ortho";' in text and 'node [shape="record"];' in text
    d1 = dot.get_node(id(m.get_layer("d1")))[0]["label"]
    assert "<b>d1</b> (Dense)" in d1 and "Activation: <b>relu</b>" in d1
    assert "Input shape: <b>(None, 4)</b>" in d1 and "Output shape: <b>(None, 5)</b>" in d1
    assert "Output dtype: <b>float32</b>" in d1 and "Trainable" in d1
    add = dot.get_node(id(m.get_layer("add")))[0]["label"]
    assert "Input shape: <b>[(None, 5), (None, 5)]</b>" in add and "Trainable" not in add
    inp = dot.get_node(id(m.get_layer("a")))[0]["label"]
    assert "Input shape" not in inp and "Output shape: <b>(None, 4)</b>" in inp
    plain = K.utils.model_to_dot(m, show_layer_names=False)
    label = plain.get_node(id(m.get_layer("d1")))[0]["label"]
    assert "<b>Dense</b>" in label and "d1" not in label and "shape" not in label


def test_sequential_nested_and_subclassed():
    inner = K.Sequential([K.Input((8,)), K.layers.Dense(4, name="i1"),
                          K.layers.Dense(2, name="i2")], name="inner")
    outer = K.Sequential([K.Input((8,)), inner, K.layers.Dense(1, name="o1")], name="outer")
    flat = K.utils.model_to_dot(outer)
    names = _names(outer)
    assert [names[n] for n in flat.get_nodes()] == ["inner", "o1"]
    assert [(names[s], names[d]) for s, d in flat.get_edges()] == [("inner", "o1")]
    nested = K.utils.model_to_dot(outer, expand_nested=True, rankdir="LR")
    (cluster,) = nested.get_subgraphs()
    assert cluster.get("label") == "inner" and cluster.get("style") == "dashed"
    ids = {str(id(inner.get_layer(n))): n for n in ("i1", "i2")}
    ids[str(id(outer.get_layer("o1")))] = "o1"
    assert [(ids[s], ids[d]) for s, d in cluster.get_edges()] == [("i1", "i2")]
    assert [(ids[s], ids[d]) for s, d in nested.get_edges()] == [("i2", "o1")]
    assert 'subgraph "cluster_inner" {' in nested.to_string()

    class Sub(K.Model):
        def __init__(self):
            super().__init__(name="sub")
            self.d = K.layers.Dense(2)

        def call(self, x):
            return self.d(x)
    sub = Sub()
    sub(gt.zeros((1, 3)))
    one = K.utils.model_to_dot(sub)
    assert one.get_nodes() == [str(id(sub))] and one.get_edges() == []


def test_plot_model_files(tmp_path):
    pytest.importorskip("matplotlib")
    m = _two_input()
    dot_file = tmp_path / "m.dot"
    assert K.utils.plot_model(m, to_file=dot_file, show_shapes=True) is None
    text = dot_file.read_text()
    assert text == K.utils.model_to_dot(m, show_shapes=True, show_layer_names=False).to_string()
    png = tmp_path / "m.png"
    K.utils.plot_model(m, to_file=str(png), show_shapes=True, show_layer_names=True)
    head = png.read_bytes()[:8]
    assert head == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 5000
    svg = tmp_path / "m.svg"
    K.utils.plot_model(K.Sequential([K.Input((2,)), K.layers.Dense(1)]), to_file=str(svg),
                       rankdir="LR")
    assert b"<svg" in svg.read_bytes()[:400]


def test_errors():
    unbuilt = K.Sequential([K.layers.Dense(2)])
    with pytest.raises(ValueError, match="has not yet been built"):
        K.utils.model_to_dot(unbuilt)
    m = _two_input()
    with pytest.raises(ValueError, match="layer_range` is no longer supported"):
        K.utils.plot_model(m, layer_range=["a", "b"])
    with pytest.raises(ValueError, match="Unrecognized keyword arguments"):
        K.utils.model_to_dot(m, colour=True)
    with pytest.raises(TypeError, match="expected a keras Model"):
        K.utils.model_to_dot(K.layers.Dense(2))
