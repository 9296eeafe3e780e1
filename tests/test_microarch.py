"""The physical limits beside the roofs: per microarchitecture, at the TSC's clock."""

import pytest

from roofline.model.microarch import MICROARCH, limits, tsc_ghz

XEON = "processor\t: 0\nflags\t\t: fpu tsc constant_tsc avx512f\nbogomips\t: 4200.00\n"


def test_the_xeons_two_cores_at_the_tsc_clock():
    """The issue's figures: two 512-bit FMA ports and two 64-byte loads a cycle, 2 cores at 2.1 GHz."""
    got = limits("emerald-rapids", 2, tsc_ghz(XEON))
    assert got == pytest.approx({"L1": 537.6, "fp32": 268.8, "fp64": 134.4})


def test_zen4_computes_512_bit_ops_as_two_halves_so_its_flops_are_zen3s():
    assert MICROARCH["zen4"].flops_per_cycle(4) == MICROARCH["zen3"].flops_per_cycle(4) == 32
    assert MICROARCH["zen3"].flops_per_cycle(8) == 16
    assert all(m.source for m in MICROARCH.values())


def test_an_unknown_core_or_clock_has_no_limit():
    assert limits("zen9", 2, 2.0) == {} and limits(None, 2, 2.0) == {} and limits("zen4", 2, 0.0) == {}
    assert tsc_ghz("flags\t: tsc\nbogomips\t: 4200.00\n") is None  # no constant TSC: bogomips says nothing
    assert tsc_ghz("") is None
