"""The lab's measured claim, on this machine, with weights that escape the caches."""

import pytest

from roofline.measure.numpy_step import decode_step
from roofline.measure.step import measure_step

pytestmark = pytest.mark.slow


def test_batch_64_delivers_over_twice_the_flops_of_batch_1_from_dram(monkeypatch):
    monkeypatch.delenv("ROOFLINE_LLC_BYTES", raising=False)
    one = decode_step(2048, 1, regime="dram")
    assert one.pool_bytes >= 4 * one.llc_bytes  # the real LLC, as the OS reports it
    g1 = measure_step(one).gflops
    g64 = measure_step(decode_step(2048, 64, regime="dram")).gflops
    assert g64 > 2 * g1, f"batch 1 {g1:.1f} GFLOP/s, batch 64 {g64:.1f} GFLOP/s"
