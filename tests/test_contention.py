"""Contention: the verdict on a run's conditions, the /proc/stat arithmetic, and a busy neighbour caught."""

from __future__ import annotations

import subprocess
import sys
import time
from dataclasses import replace

import numpy as np
import pytest

from roofline.errors import KernelMismatch
from roofline.measure import contention
from roofline.measure.contention import CpuTimes, blas_limit, cpu_times, lost_shares, sample_cpu
from roofline.model.conditions import (
    LOST_SHARE_LIMIT,
    REFERENCE_MARGIN,
    Conditions,
    blas_threads_for,
    flat_timing,
)

STAT = """cpu  {t} 0 0 0 0 0 0 0 0 0
cpu0 {u0} 0 {s0} {i0} 0 0 0 {st0} 0 0
cpu1 {u1} 0 0 {i1} 0 0 0 0 0 0
intr 1 2 3
procs_running {r}
procs_blocked 0
"""


def stat(tmp_path, name, clock=0.0, **v) -> CpuTimes:
    path = tmp_path / name
    path.write_text(STAT.format(t=0, **v))
    times = cpu_times(path)
    assert times is not None
    return replace(times, clock=clock)


def test_lost_share_counts_others_and_steal_but_not_our_own_time(tmp_path, monkeypatch):
    monkeypatch.setattr(contention.os, "sched_getaffinity", lambda _: {0, 1})
    a = stat(tmp_path, "a", u0=0, s0=0, i0=100, st0=0, u1=0, i1=100, r=1)
    # 2 cores × 1 s: 200 jiffies, cpu0 busy 100 (user 80 + system 20), cpu1 idle 90 and user 10, steal 0
    b = stat(tmp_path, "b", clock=1.0, u0=80, s0=20, i0=100, st0=0, u1=10, i1=190, r=3)
    assert (b.busy - a.busy, b.total - a.total, b.running, b.cores) == (110, 200, 3, 2)
    assert lost_shares(a, b) == pytest.approx((110 / 200, 0.0))
    assert lost_shares(a, b, own_cpu_s=0.6) == pytest.approx((50 / 200, 0.0))  # our 0.6 of 2 core-s is not lost
    c = stat(tmp_path, "c", clock=1.0, u0=80, s0=20, i0=100, st0=40, u1=10, i1=190, r=3)  # 40 more stolen
    assert lost_shares(a, c, own_cpu_s=1.1) == pytest.approx((40 / 240, 40 / 240))
    # jiffies ticking faster than the wall clock (some hypervisors): our share is one of the wall time
    fast = stat(tmp_path, "fast", clock=0.5, u0=80, s0=20, i0=100, st0=0, u1=10, i1=190, r=3)
    assert lost_shares(a, fast, own_cpu_s=0.3) == pytest.approx((110 / 200 - 0.3, 0.0))


def test_the_suites_own_cpu_time_counts_the_children_it_waited_for():
    """A referee's likwid-bench run is the suite's own work, not a neighbour's: the CPU time of a child
    that burned 0.3 s of it counts as ours once we have waited for it (it is CPU time, not wall time:
    a busy machine slows the child without changing what it counts)."""
    burn = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.3: pass"
    before, mine = contention.own_cpu_seconds(), time.process_time()
    subprocess.run([sys.executable, "-c", burn], check=True)
    children = contention.own_cpu_seconds() - before - (time.process_time() - mine)
    assert children >= 0.25, children


def test_only_the_cores_this_process_may_use_count(tmp_path, monkeypatch):
    monkeypatch.setattr(contention.os, "sched_getaffinity", lambda _: {1})
    b = stat(tmp_path, "b", u0=80, s0=20, i0=0, st0=5, u1=10, i1=90, r=3)
    assert (b.busy, b.steal, b.total) == (10, 0, 100)


def test_no_proc_stat_means_not_measured(tmp_path):
    assert cpu_times(tmp_path / "absent") is None
    c = sample_cpu(0.05, path=tmp_path / "absent")
    assert c.lost_share is None and c.reasons() == [] and not c.contended and c.quietness is None


def test_the_verdict_and_its_one_line():
    quiet = Conditions(lost_share=0.02, steal_share=0.0, run_queue=0.1, reference_drift=1.03, flat_timing=False)
    assert not quiet.contended and quiet.headline() is None and quiet.quietness == pytest.approx(0.98)
    busy = Conditions(lost_share=0.47, steal_share=0.02, run_queue=1.2, blas_threads=1, cores=2)
    line = busy.headline()
    assert line.startswith("MEASURED UNDER CONTENTION: 47% of CPU time lost to other processes (steal 2%)")
    assert "1.2 other runnable" in line and "the BLAS ran on 1 of 2 threads" in line
    drifted = Conditions(lost_share=0.0, reference_drift=REFERENCE_MARGIN * 1.1)
    assert drifted.contended and "reference kernel took" in drifted.headline()
    assert Conditions(reference_drift=1 / (REFERENCE_MARGIN * 1.1)).contended  # faster at the end counts too
    assert Conditions(flat_timing=True).contended
    assert not Conditions(lost_share=LOST_SHARE_LIMIT).contended  # the limit itself is still quiet
    assert Conditions(lost_share=0.5).as_dict()["contended"] is True


def test_flat_timing_is_a_scheduler_slice_per_call():
    # (seconds, flops, bytes): cache n=1024 b=1, DRAM n=2048 b=1 and b=64, DRAM n=8192 b=1
    points = [(1e-3 * 4 * 1024**2, 2 * 1024**2, 4 * 1024**2)]
    points += [(1e-3 * 4 * 2048**2, 2 * 2048**2, 4 * 2048**2), (1e-3 * 4 * 2048**2, 2 * 2048**2 * 64, 4 * 2048**2)]
    points += [(1e-3 * 4 * 8192**2, 2 * 8192**2, 4 * 8192**2)]
    scaled = [(s * 1e-9, f, b) for s, f, b in points]
    assert flat_timing(scaled) is False  # time follows the work
    sliced = [(0.008, f, b) for _, f, b in points]
    assert flat_timing(sliced) is True  # 8 ms whatever the size: a slice per call
    assert flat_timing([(0.008, 1.0, 1.0), (0.009, 2.0, 2.0)]) is None  # nothing differs enough to tell
    assert flat_timing([]) is None


def test_the_blas_gets_the_cores_others_leave():
    assert blas_threads_for(2, None) == 2 and blas_threads_for(2, 0.3) == 2  # quiet: every core
    assert blas_threads_for(2, 1.0) == 1 and blas_threads_for(2, 2.4) == 1  # never fewer than one
    assert blas_threads_for(16, 3.0) == 13


def test_blas_limit_puts_the_blas_on_fewer_threads_and_back():
    from roofline.host import blas_threads

    before = blas_threads()
    with blas_limit(1):
        assert blas_threads() in (1, None)
    assert blas_threads() == before
    with blas_limit(None):
        assert blas_threads() == before


def test_the_reference_kernel_is_validated(monkeypatch):
    assert contention.reference_seconds(contention.reference_kernel(), seconds=0.01) > 0
    monkeypatch.setattr(np, "matmul", lambda a, b, out=None: np.zeros_like(out))
    with pytest.raises(KernelMismatch):
        contention.reference_kernel()


@pytest.fixture
def two_busy_loops():
    loops = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    time.sleep(0.3)
    yield
    for p in loops:
        p.kill()
        p.wait()


def test_two_busy_loops_are_caught(two_busy_loops):
    """Beside two busy processes the cores are others': the sample says so, whatever else runs here."""
    c = sample_cpu(1.0)
    if c.lost_share is None:
        pytest.skip("no /proc/stat here")
    assert c.contended and c.lost_share > LOST_SHARE_LIMIT
    assert c.run_queue >= 1.0


def test_make_bench_stops_on_a_busy_machine_with_one_line_unless_allowed(monkeypatch, capsys):
    from roofline import asv_driver
    from roofline.errors import EXIT_BUSY

    busy = Conditions(lost_share=0.47, steal_share=0.0, run_queue=1.4)
    monkeypatch.setattr(contention, "sample_cpu", lambda *a, **k: busy)
    assert asv_driver.busy_before(allow_busy=False) == EXIT_BUSY == 3
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "busy machine" in err[0] and "47% of the CPU time" in err[0] and "--allow-busy" in err[0]
    assert asv_driver.busy_before(allow_busy=True) is None
    assert "measuring anyway" in capsys.readouterr().err
    monkeypatch.setattr(contention, "sample_cpu", lambda *a, **k: Conditions(lost_share=0.02, run_queue=0.0))
    assert asv_driver.busy_before(allow_busy=False) is None


def test_a_quiet_vm_s_reference_drift_is_no_contention_but_twice_is():
    """Quiet runs of this VM's reference kernel drifted 0.75–1.27 (REFERENCE_MARGIN's figure): none of that
    flags a run; a kernel twice as slow, or as fast, at the end does."""
    for drift in (0.75, 1.0, 1.27, REFERENCE_MARGIN, 1 / REFERENCE_MARGIN):  # the margins themselves are quiet
        assert not Conditions(reference_drift=drift).contended, drift
    for drift in (2.0, 0.5):
        assert Conditions(reference_drift=drift).contended, drift


def test_flat_timing_leaves_out_the_points_that_were_not_timed():
    points = [(4 * n**2, 2 * n**2 * b, 4 * n**2) for n, b in ((1024, 1), (2048, 1), (2048, 64), (8192, 1))]
    untimed = [(None, 2 * 4096**2, 4 * 4096**2), (0.0, 2 * 512**2, 4 * 512**2)]  # skipped, failed
    assert flat_timing([(s * 1e-12, f, b) for s, f, b in points] + untimed) is False
    assert flat_timing([(0.008, f, b) for _, f, b in points] + untimed) is True
    assert flat_timing(untimed) is None


def test_four_times_the_work_is_enough_to_tell_flat_timing():
    """FLAT_WORK_RATIO's 4×: n=1024 and n=2048 at batch 1 differ by exactly that in bytes and FLOPs."""
    small, large = (2 * 1024**2, 4 * 1024**2), (2 * 2048**2, 4 * 2048**2)
    assert flat_timing([(0.008, *small), (0.008, *large)]) is True
    assert flat_timing([(0.001, *small), (0.004, *large)]) is False
