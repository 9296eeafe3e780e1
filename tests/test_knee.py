import math
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from roofline.errors import BadInput
from roofline.measure.sweep import SweepRounds, sweep
from roofline.model.knee import fit_knee

BATCHES = [2**i for i in range(11)]


def synthetic(knee, t_mem=1e-3, noise=0.0, seed=0):
    rng = random.Random(seed)
    return [max(t_mem, b * t_mem / knee) * math.exp(rng.gauss(0, noise)) for b in BATCHES]


@pytest.mark.parametrize("knee", [3.0, 24.0, 96.0, 300.0])
def test_exact_knee_is_recovered(knee):
    k = fit_knee(BATCHES, synthetic(knee))
    assert k.batch == pytest.approx(knee, rel=1e-9)
    assert k.within_sweep
    assert k.rms_log_error < 1e-9


@pytest.mark.parametrize("seed", range(5))
def test_noisy_knee_is_recovered_within_30_percent(seed):
    k = fit_knee(BATCHES, synthetic(40.0, noise=0.08, seed=seed))
    assert k.batch == pytest.approx(40.0, rel=0.3)


def test_slow_intermediate_batches_do_not_move_the_knee_far():
    # skinny GEMMs slower than the model (as OpenBLAS is at batch 2..16)
    times = synthetic(24.0)
    for i, b in enumerate(BATCHES):
        if 2 <= b <= 16:
            times[i] *= 2.0
    assert fit_knee(BATCHES, times).batch == pytest.approx(24.0, rel=0.35)


def test_knee_outside_the_sweep_is_flagged():
    flat = fit_knee(BATCHES, [1e-3] * len(BATCHES))
    assert not flat.within_sweep and flat.batch >= BATCHES[-1]
    linear = fit_knee(BATCHES, [b * 1e-6 for b in BATCHES])
    assert not linear.within_sweep and linear.batch <= BATCHES[0] * (1 + 1e-9)


@given(
    times=st.lists(st.floats(1e-7, 1e3), min_size=len(BATCHES), max_size=len(BATCHES)),
    scale=st.floats(1e-3, 1e3),
)
def test_knee_is_finite_positive_and_scale_free(times, scale):
    k = fit_knee(BATCHES, times)
    assert math.isfinite(k.batch) and k.batch > 0
    assert k.t_mem > 0 and k.t_flop > 0
    k2 = fit_knee(BATCHES, [t * scale for t in times])
    assert k2.batch == pytest.approx(k.batch, rel=1e-6)


@given(knee=st.floats(1.5, 700), t_mem=st.floats(1e-6, 1.0))
def test_knee_of_exact_model_anywhere_in_the_sweep(knee, t_mem):
    k = fit_knee(BATCHES, synthetic(knee, t_mem))
    assert k.batch == pytest.approx(knee, rel=1e-6)


@pytest.mark.parametrize(
    "batches,times",
    [([1], [1.0]), ([1, 2], [1.0]), ([1, 1], [1.0, 2.0]), ([1, 2], [0.0, 1.0]), ([1, 2], [1.0, float("nan")])],
)
def test_bad_sweeps(batches, times):
    with pytest.raises(BadInput):
        fit_knee(batches, times)


def test_sweep_end_to_end_small(small_machine):
    s = sweep(n=128, batches=(1, 4, 16), repeats=3)
    assert [p.batch for p in s.points] == [1, 4, 16]
    assert all(p.gflops > 0 for p in s.points)
    assert s.knee.batch > 0


def test_a_sweep_in_rounds_pools_every_rounds_samples(small_machine):
    rounds = SweepRounds(n=128, batches=(1, 4, 16), repeats=3, min_total_s=0.0)
    with pytest.raises(BadInput, match="no round"):
        rounds.result()
    rounds.time()
    once = rounds.result()
    rounds.time()
    twice = rounds.result()
    assert [p.batch for p in twice.points] == [1, 4, 16] and twice.knee.batch > 0
    assert [p.samples for p in twice.points] == [2 * p.samples for p in once.points] == [6, 6, 6]
