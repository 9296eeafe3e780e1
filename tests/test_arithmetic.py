import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from roofline.errors import BadInput
from roofline.model.arithmetic import (
    arithmetic_intensity,
    attainable,
    bound_at,
    crossover_batch,
    gemm_intensity,
    ridge_point,
    roofline_fraction,
)
from roofline.model.hardware import H100, Hardware


def test_h100_ridge_and_crossover():
    assert ridge_point(H100) == pytest.approx(990e12 / 3.35e12)
    assert ridge_point(H100) == pytest.approx(295.5, abs=0.1)
    assert crossover_batch(H100, bytes_per_param=2) == pytest.approx(295.5, abs=0.1)
    assert crossover_batch(H100, bytes_per_param=4) == pytest.approx(591.0, abs=0.2)
    assert crossover_batch(H100, bytes_per_param=1) == pytest.approx(147.8, abs=0.1)


def test_h100_bounds_at_the_lab_batches():
    assert [bound_at(H100, b) for b in (1, 8, 64)] == ["bandwidth"] * 3
    assert bound_at(H100, 512) == "compute"
    # the lab's assert
    assert arithmetic_intensity(1) < ridge_point(H100) < arithmetic_intensity(512)


def test_intensity_definition():
    assert arithmetic_intensity(1) == 1.0
    assert arithmetic_intensity(64, bytes_per_param=4) == 32.0
    assert arithmetic_intensity(8, bytes_per_param=0.5) == 32.0


def test_attainable_is_the_roofline():
    assert attainable(H100, 1.0) == pytest.approx(3.35e12)
    assert attainable(H100, 1e6) == pytest.approx(990e12)
    assert roofline_fraction(3.35e12 / 2, H100, 1.0) == pytest.approx(0.5)


def test_exact_gemm_intensity_matches_formula():
    n, b = 2048, 512
    assert gemm_intensity(n, b, 4) == pytest.approx(2 * n * n * b / (4 * (n * n + 2 * n * b)))
    # at batch 512 and small n the activations matter: a third lower than 2b/bytes here
    assert gemm_intensity(n, b, 4) < 0.7 * arithmetic_intensity(b, 4)


@given(
    n=st.integers(1, 2**17),
    b=st.integers(1, 2**14),
    bytes_=st.sampled_from([0.5, 1, 2, 4, 8]),
)
def test_exact_intensity_never_exceeds_the_weight_only_figure(n, b, bytes_):
    assert 0 < gemm_intensity(n, b, bytes_) <= arithmetic_intensity(b, bytes_) * (1 + 1e-12)


@given(n=st.integers(1, 2**16), b=st.integers(1, 2**12), bytes_=st.sampled_from([1, 2, 4]))
def test_exact_intensity_rises_with_batch(n, b, bytes_):
    assert gemm_intensity(n, b + 1, bytes_) > gemm_intensity(n, b, bytes_)


@given(b=st.integers(1, 4096), bytes_=st.sampled_from([1, 2, 4]))
def test_exact_intensity_tends_to_weight_only_as_n_grows(b, bytes_):
    limit = arithmetic_intensity(b, bytes_)
    assert gemm_intensity(10**9, b, bytes_) == pytest.approx(limit, rel=1e-4)
    assert gemm_intensity(10**7, b, bytes_) > gemm_intensity(10**4, b, bytes_)


@given(
    peak=st.floats(1e6, 1e18),
    bw=st.floats(1e6, 1e15),
    ai=st.floats(1e-6, 1e9),
)
def test_attainable_is_min_of_the_roofs(peak, bw, ai):
    hw = Hardware("x", {"bf16": peak}, bw)
    got = attainable(hw, ai)
    assert got <= peak * (1 + 1e-12) and got <= ai * bw * (1 + 1e-12)
    assert math.isclose(got, min(peak, ai * bw), rel_tol=1e-12)


@pytest.mark.parametrize("bad", [0, -1, float("nan"), float("inf"), "8", None, True])
def test_bad_batch_is_rejected(bad):
    with pytest.raises(BadInput):
        arithmetic_intensity(bad)


def test_unknown_dtype_names_the_known_ones():
    with pytest.raises(BadInput, match="bf16"):
        ridge_point(H100, "fp8")


def test_measured_roofs_give_a_ridge_and_a_crossover_or_none():
    """The one rule the run, the report and compare share: ridge = peak ÷ bandwidth, crossover = ridge × bytes ÷ 2."""
    from roofline.model.arithmetic import measured_ridge, predicted_crossover

    assert measured_ridge(200e9, 25e9) == 8.0
    assert predicted_crossover(200e9, 25e9, 4) == 16.0 and predicted_crossover(200e9, 25e9, 2) == 8.0
    assert predicted_crossover(H100.peak("bf16"), H100.bandwidth, 2) == crossover_batch(H100, 2, "bf16")
    for peak, bandwidth in ((None, 25e9), (200e9, None), (0.0, 25e9)):
        assert measured_ridge(peak, bandwidth) is None and predicted_crossover(peak, bandwidth, 4) is None
