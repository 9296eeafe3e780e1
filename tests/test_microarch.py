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


def test_the_core_comes_from_the_family_and_model_and_the_clock_from_the_tsc_or_the_model_name():
    from roofline.model.microarch import NOMINAL, TSC, Clock, clock_of, core_of

    assert core_of({"vendor": "AuthenticAMD", "cpu family": 25, "model": 17}) == "zen4"
    assert core_of({"vendor": "GenuineIntel", "cpu family": 6, "model": 207}) == "emerald-rapids"
    assert core_of({}) is None
    assert clock_of(XEON) == Clock(2.1, TSC) and Clock.parse(Clock(2.1, TSC).key) == Clock(2.1, TSC)
    bare = "model name\t: Intel(R) Xeon(R) Gold 6430 CPU @ 2.10GHz\nflags\t: fpu tsc\n"
    assert clock_of(bare) == Clock(2.1, NOMINAL)  # no constant TSC: the model name's nominal clock
    assert clock_of("model name\t: AMD EPYC\n") is None and Clock.parse("") is None and Clock.parse("fast") is None


def _report(facts):
    from roofline.model.hierarchy import Hierarchy, LevelRoof
    from roofline.report.cpu import Roofs, build_report
    from roofline.report.text import render_text

    roofs = Roofs({"read": 30e9}, {"float32": 150e9, "float64": 75e9})
    hierarchy = Hierarchy((LevelRoof("L1", 64 * 1024, 300.0, "numba load"),))
    report = build_report({"cpu": "AMD EPYC", "num_cpu": 2, **facts}, roofs, hierarchy=hierarchy)
    return report, render_text(report)


def test_each_roof_beside_its_physical_limit_where_the_core_and_clock_are_known():
    report, text = _report({"cpu_core": "zen4", "cpu_clock": "2.60 GHz (TSC)"})
    got = {r: round(f / m, 3) for r, f, m in report.limits}
    # Zen 4 at 2.6 GHz on 2 cores: 64 B × 5.2 = 332.8 GB/s; 32 fp32 FLOPs × 5.2 = 166.4; fp64 83.2
    assert got == {"L1": round(300 / 332.8, 3), "fp32": round(150 / 166.4, 3), "fp64": round(75 / 83.2, 3)}
    assert "2 Zen 4 cores at 2.60 GHz, the TSC's" in text and "roof ÷ limit 0.90" in text
    assert report.as_dict()["physical_limits"]["clock_source"] == "TSC"


def test_an_unknown_cpu_or_an_unrecorded_clock_prints_no_limit():
    for facts in ({}, {"cpu_core": "zen9", "cpu_clock": "2.60 GHz (TSC)"}, {"cpu_core": "zen4", "cpu_clock": ""}):
        report, text = _report(facts)
        assert report.limits == [] and "physical limits" not in text and "physical_limits" not in report.as_dict()
