import pytest

from roofline.errors import BadInput
from roofline.model.hardware import H100, Hardware


def test_lab_h100_figures():
    assert H100.peak("bf16") == 990e12
    assert H100.bandwidth == 3.35e12
    assert "datasheet" in H100.source


@pytest.mark.parametrize(
    "kwargs",
    [
        {"name": "", "peak_flops": {"bf16": 1.0}, "bandwidth": 1.0},
        {"name": "x", "peak_flops": {}, "bandwidth": 1.0},
        {"name": "x", "peak_flops": {"bf16": -1.0}, "bandwidth": 1.0},
        {"name": "x", "peak_flops": {"bf16": 1.0}, "bandwidth": 0},
        {"name": "x", "peak_flops": {"bf16": float("nan")}, "bandwidth": 1.0},
        {"name": "x", "peak_flops": {"bf16": 1.0}, "bandwidth": "3e12"},
    ],
)
def test_invalid_hardware_is_refused(kwargs):
    with pytest.raises(BadInput):
        Hardware(**kwargs)
