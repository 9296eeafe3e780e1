"""The one dtype table: its names agree with numpy's and torch's, and every user of it reads it."""

import numpy as np
import pytest

from roofline.errors import BadInput
from roofline.model.dtypes import DTYPES, PEAKS, STEPS, SUITE, TABLE, by_numpy


def test_names_are_unique_and_the_peaks_keep_the_catalogue_order():
    assert len(DTYPES) == len(TABLE)
    assert PEAKS == ("fp64", "fp32", "tf32", "bf16", "fp16", "fp8", "int8")
    assert STEPS == ("fp64", "fp32", "tf32", "bf16", "fp16", "fp8")
    assert SUITE.numpy == "float32" and SUITE.bytes == 4


def test_numpy_names_match_numpy_widths():
    for d in TABLE:
        if d.numpy:
            assert np.dtype(d.numpy).itemsize == d.bytes, d.name
            assert by_numpy(d.numpy) is d
    with pytest.raises(BadInput, match="unknown dtype 'float16' for numpy"):
        by_numpy("float16")


def test_every_step_dtype_has_a_tolerance_and_a_torch_name_of_its_width():
    torch = pytest.importorskip("torch")
    for name in STEPS:
        d = DTYPES[name]
        assert d.tolerance and d.torch, name
        if hasattr(torch, d.torch):
            assert torch.empty((), dtype=getattr(torch, d.torch)).element_size() == d.bytes, name


def test_only_the_scaled_dtype_needs_scales():
    assert [d.name for d in TABLE if d.scaled] == ["fp8"]
