"""The asv suite for real: `asv check`, a whole `asv run` at small sizes, `asv publish`."""

import itertools
import json
import math
import shutil
import sys

import pytest

from roofline.bench import TWIN_REPEAT
from roofline.model.arithmetic import gemm_intensity
from roofline.model.conditions import Conditions

from .asvtools import ROOT, asv, git, load_results, result_files, selection

sys.path.insert(0, str(ROOT))
from benchmarks.common import GRID  # noqa: E402

pytestmark = pytest.mark.e2e


#: The machine name the session's `roofline bench` files its results under (conftest.made_bench).
MACHINE = "box"


@pytest.fixture(scope="module")
def ran(made_bench):
    """The session's one `roofline bench` at small sizes: its `asv run --python=same --record-samples` over
    the chosen combinations is the suite's whole asv run, as a user's `asv run` makes it."""
    return made_bench["repo"], made_bench["env"], made_bench["proc"]


def test_asv_check_passes(ran):
    repo, env, _ = ran
    proc = asv(repo, env, "check", "--python=same")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_asv_run_exits_0_and_records_every_chosen_combination(ran):
    repo, _, proc = ran
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    files = result_files(repo, MACHINE)
    assert len(files) == 1
    results = load_results(files[0])
    bench = json.loads((repo / ".asv" / "results" / "benchmarks.json").read_text())
    expected = {name for name in bench if name != "version"}
    missing = {name for name in expected if name.startswith(("decode.", "ceilings.", "crossover.", "conditions."))}
    assert not missing - set(results)
    chosen = {"256", "1", "8"}  # SMALL_ENV: n 256 (DRAM and cache-resident), batches 1 and 8
    for name, (values, params) in results.items():
        if not name.startswith(("decode.", "ceilings.", "crossover.", "conditions.")):
            continue
        combos = list(itertools.product(*params)) if params else [()]
        assert len(values) == len(combos), name
        for combo, v in zip(combos, values, strict=True):
            if name == "ceilings.ComputePeak.track_peak" and (v is None or math.isnan(v)):
                continue  # a torch dtype this CPU (or asv's env) cannot run: skipped, which asv records as NaN
            if name.startswith("decode.") and not set(combo) <= chosen:
                assert v is None or math.isnan(v), (name, combo, v)  # the fixed grid, not chosen: skipped
                continue
            assert v is not None and math.isfinite(v) and v > 0, (name, combo, v)
            if ".track_" in name:
                assert isinstance(v, float)
    _, params = results["decode.DecodeDRAM.track_gflops"]
    assert params == [[str(n) for n in GRID["ROOFLINE_N"]], [str(b) for b in GRID["ROOFLINE_BATCH"]]]


def test_one_timing_per_point_and_batch_8_outdoes_batch_1(ran):
    """GB/s × intensity = GFLOP/s exactly for every recorded point; batch 1 and 8 were timed alternately,
    so whatever the machine did landed on both, and the same weights give more FLOP/s at batch 8."""
    repo, _, _ = ran
    results = load_results(result_files(repo, MACHINE)[0])
    for cls in ("DecodeDRAM", "DecodeCacheResident"):
        gflops, params = results[f"decode.{cls}.track_gflops"]
        gbps, _ = results[f"decode.{cls}.track_bandwidth"]
        by = dict(zip(itertools.product(*params), zip(gflops, gbps, strict=True), strict=True))
        for b in (1, 8):
            f, g = by[("256", str(b))]
            assert g * gemm_intensity(256, b, 4) == pytest.approx(f, rel=1e-3), (cls, b)  # 4 significant digits each
        if not _contended(results):  # a run the machine disturbed is flagged, not held to the claim
            assert by[("256", "8")][0] > 1.5 * by[("256", "1")][0], cls  # 8× the FLOPs over nearly the same bytes


def _contended(results) -> bool:
    """Whether the run's recorded conditions (conditions.RunConditions) say it was measured under contention."""
    quiet = results["conditions.RunConditions.track_quietness"][0][0]
    drift = results["conditions.RunConditions.track_reference_drift"][0][0]
    return Conditions(lost_share=1 - quiet, reference_drift=drift).contended


def test_the_run_measures_each_memory_level_once(ran):
    """The level roofs of the run (the levels of this machine, the LLC at ROOFLINE_LLC_BYTES), as asv
    records them, the innermost faster than DRAM. With the LLC pretended at 1 MiB the "DRAM" pool (≥ 4 MiB) sits in
    this machine's real L3 and the pretend L3 at its L2's edge: on this 2-core VM the two read 57.7 and
    65.9 GB/s once, so only the innermost (L1, 136 GB/s there) is surely faster."""
    pytest.importorskip("numba")
    from roofline.measure.levels import level_names

    repo, _, _ = ran
    results = load_results(result_files(repo, MACHINE)[0])
    gbps, params = results["ceilings.CacheBandwidth.track_bandwidth"]
    sizes, _ = results["ceilings.CacheBandwidth.track_capacity"]
    rows = zip([p.strip("'") for p in params[0]], gbps, sizes, strict=True)
    levels = {level: (g, size) for level, g, size in rows if g is not None and not math.isnan(g)}
    assert list(levels) == level_names(), levels
    for level, (g, size) in levels.items():
        assert type(g) is float and g > 0 and size > 0, (level, g, size)
    assert levels[level_names()[0]][0] > levels["DRAM"][0], levels
    assert levels[level_names()[-2]][1] == 2**20


def test_guards_reach_asv_stderr(ran):
    _, _, proc = ran
    # the 1 MiB "LLC" set by ROOFLINE_LLC_BYTES is a guard's business: it reaches asv's stderr once in the
    # run, not once per process of the three DRAM classes' points (the processes reading one setup_cache
    # note in its folder what was said; asv shows the last of its rounds)
    guard = "roofline: warning: the LLC size (1 MiB) comes from ROOFLINE_LLC_BYTES, not the OS"
    assert proc.stdout.count(guard) == 1, proc.stdout[-3000:]
    # it makes the cache-resident class fit and the DRAM class escape: no LLC warning for DRAM
    assert "fits in the" not in proc.stdout


def test_asv_publish_writes_html(ran, tmp_path):
    repo, env, _ = ran
    html = tmp_path / "html"  # not the run's own folder: test_bench_html reads the page roofline bench left there
    proc = asv(repo, env, "publish", "--html-dir", str(html))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (html / "index.html").is_file()
    root = html / "graphs"
    graphs = [g for g in root.rglob("decode.DecodeDRAM.track_gflops.json") if "summary" not in g.parts]
    assert graphs


def test_a_run_at_other_sizes_keeps_both_series_in_the_published_graph(ran, tmp_path):
    """Issue 13: changing the sizes never empties a graph. A second commit runs at n=1024 where the first ran
    at n=256; benchmarks.json stays the same and the published graph holds both series."""
    first_repo, first_env, _ = ran
    repo = tmp_path / "repo"
    shutil.copytree(first_repo, repo, ignore=shutil.ignore_patterns("html"))
    before = (repo / ".asv" / "results" / "benchmarks.json").read_bytes()
    git(repo, "commit", "-q", "--allow-empty", "-m", "second")
    env = {**first_env, "ASV_PYTHONPATH": str(repo), "ROOFLINE_N": "1024"}
    head = git(repo, "rev-parse", "HEAD")
    only = selection(repo, env, r"DecodeDRAM\.track_gflops")
    proc = asv(repo, env, "run", "--python=same", "--set-commit-hash", head, "--machine", MACHINE, *only)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert (repo / ".asv" / "results" / "benchmarks.json").read_bytes() == before
    proc = asv(repo, env, "publish")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    combos = list(itertools.product(GRID["ROOFLINE_N"], GRID["ROOFLINE_BATCH"]))
    root = repo / ".asv" / "html" / "graphs"
    graphs = [g for g in root.rglob("decode.DecodeDRAM.track_gflops.json") if "summary" not in g.parts]
    series = {}  # n → the number of commits with a value at batch 1
    for graph in graphs:
        for _, values in json.loads(graph.read_text()):
            for (n, batch), v in zip(combos, values, strict=True):
                if batch == 1 and v is not None and not (isinstance(v, float) and math.isnan(v)):
                    series[n] = series.get(n, 0) + 1
    assert series == {256: 1, 1024: 1}, (series, [g.relative_to(repo) for g in graphs])


def test_time_twins_take_back_to_back_steps_with_no_setup_between_them(ran):
    """Issue 13: asv-runner re-runs setup before every call when number > 1; the twins ask for number = 1
    and run their steps back to back inside that call, timed per step by their own clock; `make bench` asks
    asv for at least ``TWIN_REPEAT[0]`` samples of each."""
    repo, _, proc = ran
    assert "setup hooks re-run" not in proc.stdout + proc.stderr
    doc = json.loads(result_files(repo, MACHINE)[0].read_text())
    cols = doc["result_columns"]
    for cls in ("DecodeDRAM", "DecodeCacheResident"):
        row = doc["results"][f"decode.{cls}.time_decode_step"]
        numbers = [x for x in row[cols.index("stats_number")] if x is not None]
        samples = [s for s in row[cols.index("samples")] if s]
        assert numbers and set(numbers) == {1} and samples and all(len(s) >= TWIN_REPEAT[0] for s in samples), cls
