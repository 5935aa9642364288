"""gt.print: tf.print's output (values, TF's float digits, summarised axes, streams)."""
from __future__ import annotations

import sys

import numpy as np
import pytest

import gradtape as gt


def test_values_and_digits_go_to_stderr_by_default(capsys):
    gt.print("loss:", gt.constant(1 / 3), gt.constant(0.1), gt.constant(2.5, gt.float64),
             gt.constant(1 / 3, gt.float64), gt.constant([True, False]), 7)
    out = capsys.readouterr()
    assert out.out == ""
    assert out.err == "loss: 0.333333343 0.1 2.5 0.33333333333333331 [True False] 7\n"


def test_summarised_axes_and_nesting(capsys):
    gt.print(gt.range(10), output_stream=sys.stdout)
    gt.print(gt.reshape(gt.range(64), (8, 8)), output_stream=sys.stdout)
    gt.print(gt.reshape(gt.range(12), (3, 4)), summarize=-1, output_stream=sys.stdout)
    gt.print({"b": gt.constant([1.5, -np.inf, np.nan]), "a": "x"}, [gt.constant(1), "2"],
             sep=" | ", end="!\n", summarize=None, output_stream=sys.stdout)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "[0 1 2 ... 7 8 9]"
    assert lines[1:8] == ["[[0 1 2 ... 5 6 7]", " [8 9 10 ... 13 14 15]",
                          " [16 17 18 ... 21 22 23]", " ...", " [40 41 42 ... 45 46 47]",
                          " [48 49 50 ... 53 54 55]", " [56 57 58 ... 61 62 63]]"]
    assert lines[8:11] == ["[[0 1 2 3]", " [4 5 6 7]", " [8 9 10 11]]"]
    assert lines[11] == "{'a': 'x', 'b': [1.5 -inf nan]} | [1, '2']!"


def test_file_streams_devices_and_bad_arguments(tmp_path, capsys):
    path = tmp_path / "log.txt"
    with gt.device("strict:0"):
        x = gt.constant(np.array([[1.0, 2.0]], np.float32))
    gt.print("x", x, output_stream=f"file://{path}")
    gt.print("again", output_stream=f"file://{path}")
    assert path.read_text() == "x [[1 2]]\nagain\n"
    with pytest.raises(ValueError, match="print: summarize must be -1"):
        gt.print(x, summarize=0)
    with pytest.raises(ValueError, match="output_stream must be sys.stdout"):
        gt.print(x, output_stream="stdout")
    with pytest.raises(TypeError, match="output_stream must be writable, got int"):
        gt.print(x, output_stream=3)
    assert "print" not in gt.__all__                # (a star import keeps Python's print)
