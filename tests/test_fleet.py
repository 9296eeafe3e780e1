"""The fleet: roofline.suite.reframe_jobs's pieces, then ReFrame running the check on the local two-partition
configuration for real, `roofline merge` on the jobs' shards, asv publish and roofline compare.

The end-to-end part copies this working tree into a throwaway git repository and runs
``fleet/run.py`` (what ``make fleet`` runs) there at tiny sizes, with a references file whose
``local:cpu1`` reference no machine can reach, so the performance gate must fail on that
partition and pass on ``local:cpu``.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from roofline.cli import main
from roofline.errors import BadInput
from roofline.suite import reframe_jobs as jobs
from roofline.suite.results import read_results

from .asv_fixtures import SUITE, full_values, snapshot, write_benchmarks, write_machine, write_run
from .asvtools import asv_env, scratch_repo

ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "artifacts"
MACHINES = ["local.cpu", "local.cpu1"]

# ---- roofline.suite.reframe_jobs ----------------------------------------------------------------------------


def test_machine_names_are_unambiguous():
    assert jobs.machine_name("local", "cpu") == "local.cpu"
    assert jobs.machine_name("a-b", "c") != jobs.machine_name("a", "b-c")  # '-' is in ReFrame names, '.' is not
    with pytest.raises(BadInput):
        jobs.machine_name("local", "cpu.1")


ASV_NAMES = [  # what asv's --bench regex is searched in: name(params)
    "backends.CudaDecode.track_gflops('torch-cuda', 'bf16', 8192, 1)",
    "backends.BackendDecode.track_gflops('numpy', 'fp32', 2048, 1)",
    "decode.DecodeDRAM.track_gflops(2048, 1)",
    "crossover.Crossover.track_observed_crossover_batch",
]


def selected(regex):
    return [n.split("(")[0] for n in ASV_NAMES if regex is None or re.search(regex, n)]


def test_cpu_partitions_leave_the_cuda_class_out_and_gpu_partitions_add_it():
    assert selected(jobs.bench_regex(None, gpu=False)) == [n.split("(")[0] for n in ASV_NAMES[1:]]
    assert selected(jobs.bench_regex(None, gpu=True)) == [n.split("(")[0] for n in ASV_NAMES]
    assert selected(jobs.bench_regex("DecodeDRAM|Crossover", gpu=False)) == [
        "decode.DecodeDRAM.track_gflops",
        "crossover.Crossover.track_observed_crossover_batch",
    ]
    assert selected(jobs.bench_regex("Crossover", gpu=True)) == [
        "backends.CudaDecode.track_gflops",
        "crossover.Crossover.track_observed_crossover_batch",
    ]
    with pytest.raises(BadInput):
        jobs.bench_regex("(", gpu=False)


CUDA = "backends.CudaDecode"
GPU_SUITE = {
    **SUITE,
    f"{CUDA}.track_bandwidth": ("track", "GB/s", ["backend", "dtype", "n", "batch"], None, "v-cb"),
    f"{CUDA}.track_gflops": ("track", "GFLOP/s", ["backend", "dtype", "n", "batch"], None, "v-cg"),
}
GRID = [["'torch-cuda'"], ["'fp32'", "'bf16'"], ["8192", "16384"], ["1", "512"]]
for _name in (f"{CUDA}.track_bandwidth", f"{CUDA}.track_gflops"):
    GPU_SUITE[_name] = (*GPU_SUITE[_name][:3], GRID, GPU_SUITE[_name][4])
DECODE = [["256", "1024"], ["1", "512"]]
for _name in (
    "decode.DecodeDRAM.track_gflops",
    "decode.DecodeDRAM.track_bandwidth",
    "decode.DecodeDRAM.time_decode_step",
):
    GPU_SUITE[_name] = (*GPU_SUITE[_name][:3], DECODE, GPU_SUITE[_name][4])


def gpu_results(tmp_path: Path, cuda: list | None) -> Path:
    write_benchmarks(tmp_path, GPU_SUITE)
    write_machine(tmp_path, "cluster.gpu")
    values = {
        **full_values(),
        "decode.DecodeDRAM.track_gflops": [10.0, 200.0, 12.0, None],  # n=1024 batch=512 failed
        "decode.DecodeDRAM.track_bandwidth": [20.0, 1.0, 21.0, 0.5],
        "decode.DecodeDRAM.time_decode_step": [1.0] * 4,
        f"{CUDA}.track_bandwidth": cuda,
        f"{CUDA}.track_gflops": cuda,
    }
    write_run(tmp_path, "cluster.gpu", "c" * 40, values, suite=GPU_SUITE)
    return tmp_path


def test_figures_for_the_gate(tmp_path):
    # order: dtype (fp32, bf16) × n (8192, 16384) × batch (1, 512)
    cuda = [1.0, 2.0, 3.0, 4.0, 100.0, 900.0, 120.0, 990.0]
    res = read_results(gpu_results(tmp_path, cuda))
    figs = {f.name: f for f in jobs.fleet_figures(res, "cluster.gpu", gpu=True)}
    assert figs["batch1_gbps"].value == 21.0 and "n=1024" in figs["batch1_gbps"].note  # the largest n
    assert figs["batch512_gflops"].value == 200.0 and "n=256" in figs["batch512_gflops"].note  # largest n measured
    assert figs["bandwidth_roof_gbps"].value == 30.0  # the add kernel, the roof
    assert figs["observed_crossover"].value == 24.0
    assert figs["gpu_batch1_gbps"].value == 120.0 and figs["gpu_batch512_gflops"].value == 990.0  # bf16, n=16384
    assert [f.unit for f in figs.values()] == list(jobs.FIGURES.values())
    cpu = jobs.fleet_figures(res, "cluster.gpu", gpu=False)
    assert [f.name for f in cpu] == ["batch1_gbps", "batch512_gflops", "bandwidth_roof_gbps", "observed_crossover"]


def test_a_gpu_figure_that_ran_without_a_value_is_na_not_left_out(tmp_path):
    res = read_results(gpu_results(tmp_path, [float("nan")] * 8))  # skipped: no CUDA there
    figs = {f.name: f for f in jobs.fleet_figures(res, "cluster.gpu", gpu=True)}
    assert figs["gpu_batch1_gbps"].value is None and figs["gpu_batch1_gbps"].ran  # the check's sanity fails on it
    assert figs["gpu_batch1_gbps"].note == jobs.NOT_MEASURED
    with pytest.raises(BadInput):
        jobs.fleet_figures(res, "nobody")


def test_a_figure_whose_benchmark_did_not_run_is_left_out(tmp_path):
    write_benchmarks(tmp_path)
    write_machine(tmp_path, "m")
    write_run(tmp_path, "m", "a" * 40, {"decode.DecodeDRAM.track_gflops": [1.0, 2.0]})
    figs = {f.name: f for f in jobs.fleet_figures(read_results(tmp_path), "m", flops_batch=8)}
    assert figs["batch512_gflops"].value == 2.0
    assert not figs["observed_crossover"].ran and not figs["batch1_gbps"].ran


def test_the_shipped_references_load():
    refs = jobs.load_references(ROOT / "fleet" / "references.toml")
    for selector, figures in refs.items():
        assert re.fullmatch(r"\w+:[\w*-]+|\*", selector)
        for name, (value, *_, unit) in figures.items():
            assert value > 0 and unit == jobs.FIGURES[name]


@pytest.mark.parametrize(
    "text, problem",
    [
        ("[local-cpu]\nbatch1_gbps = { value = 1 }", "not a ReFrame"),
        ('["local:cpu"]\nbatch2_gbps = { value = 1 }', "unknown figure"),
        ('["local:cpu"]\nbatch1_gbps = 3', "expected {value"),
        ('["local:cpu"]\nbatch1_gbps = { value = 0 }', "not positive"),
        ('["local:cpu"]\nbatch1_gbps = { value = 1, lower = 0.5 }', "lower must"),
        ('["local:cpu"]\nbatch1_gbps = { value = nan }', "not a finite number"),
        ('["local:cpu"]\nbatch1_gbps = { value = 1, lowr = -0.5 }', "expected {value"),
        ("[x", "not valid TOML"),
    ],
)
def test_bad_references_are_one_line(tmp_path, text, problem):
    path = tmp_path / "refs.toml"
    path.write_text(text)
    with pytest.raises(BadInput, match=re.escape(problem)):
        jobs.load_references(path)


def test_references_become_reframes_tuples(tmp_path):
    path = tmp_path / "refs.toml"
    path.write_text('["local:*"]\nbatch1_gbps = { value = 20, lower = -0.5 }\n')
    assert jobs.load_references(path) == {"local:*": {"batch1_gbps": (20.0, -0.5, None, "GB/s")}}


def test_references_drafted_from_measured_figures_load_back(tmp_path):
    res = read_results(gpu_results(tmp_path / "r", [1.0, 2.0, 3.0, 4.0, 100.0, 900.0, 120.0, 990.0]))
    draft = tmp_path / "draft.toml"
    draft.write_text(jobs.draft_references(res))
    refs = jobs.load_references(draft)
    assert refs["cluster:gpu"]["gpu_batch512_gflops"] == (990.0, -0.5, None, "GFLOP/s")
    assert refs["cluster:gpu"]["observed_crossover"] == (24.0, -0.5, 1.0, "batch")  # no better direction
    assert refs["cluster:gpu"]["batch1_gbps"][0] == 21.0


def test_a_job_runs_the_checkouts_suite_into_its_own_folder():
    conf = jobs.job_asv_config({"repo": ".", "benchmark_dir": "benchmarks", "results_dir": ".asv/results"}, "/co")
    assert conf["repo"] == "/co" and conf["benchmark_dir"] == "/co/benchmarks" and conf["results_dir"] == "results"


# ---- ReFrame, for real -------------------------------------------------------------------------

#: The benchmarks behind the gate's four figures, and nothing else: seconds, not minutes.
BENCH = r"DecodeDRAM\.track_|MemoryBandwidth|track_observed_crossover"
#: local:cpu passes (any positive figure does); local:cpu1's batch-1 reference is a petabyte a second.
REFERENCES = """
["local:cpu"]
batch1_gbps = { value = 1e-6, lower = -0.5 }
bandwidth_roof_gbps = { value = 1e-6, lower = -0.5 }

["local:cpu1"]
batch1_gbps = { value = 1e6, lower = -0.5 }
"""
#: A machine entry written beforehand, under each partition's thread settings (its blas_threads key).
SEED_MACHINE = """
import sys
from roofline.suite.machine_file import machine_file_path, machine_keys, read_machine_file, this_host
from roofline.suite.machine_file import write_machine_file

path = machine_file_path()
entries = read_machine_file(path)
entries[sys.argv[1]] = machine_keys(sys.argv[1], this_host())
write_machine_file(path, entries)
"""
ONE_THREAD = {name: "1" for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")}


def run(cmd, cwd, env, timeout=400) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(c) for c in cmd],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


@pytest.fixture(scope="module")
def local_fleet(tmp_path_factory):
    pytest.importorskip("reframe", reason="reframe-hpc (the test extra)")
    tmp = tmp_path_factory.mktemp("fleet")
    repo = scratch_repo(tmp / "repo")
    (tmp / "home").mkdir()
    (tmp / "tmp").mkdir()
    env = asv_env(repo, tmp / "home", tmp / "cache", ROOFLINE_BATCH="1,512", TMPDIR=str(tmp / "tmp"))
    for machine, threads in zip(MACHINES, ({}, ONE_THREAD), strict=True):
        seeded = run([sys.executable, "-c", SEED_MACHINE, machine], repo, {**env, **threads})
        assert seeded.returncode == 0, seeded.stderr
    refs = tmp / "references.toml"
    refs.write_text(REFERENCES)
    out = tmp / "out"
    fleet_run = [sys.executable, repo / "fleet" / "run.py", "--out", out, "--bench", BENCH]
    fleet_run += [
        "--draft-references",
        tmp / "draft.toml",
        "--",
        "-S",
        f"references_file={refs}",
        "-S",
        "allow_busy=true",
    ]
    proc = run(fleet_run, repo, env)
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / "fleet-run.txt").write_text(proc.stdout + proc.stderr)
    # each job's own results: in ReFrame's output folder when the test passed, its stage folder when not
    jobs = [out / "reframe" / kind / "local" for kind in ("output", "stage")]
    return {
        "tmp": tmp,
        "repo": repo,
        "env": env,
        "proc": proc,
        "out": out,
        "results": out / "results",
        "draft": tmp / "draft.toml",
        "shards": {m: _job_results(jobs, m.split(".", 1)[1]) for m in MACHINES},
    }


def _job_results(jobs: list[Path], partition: str) -> Path:
    found = [d for j in jobs if (d := j / partition / "builtin" / "RooflineSuite" / "results").is_dir()]
    assert found, f"no results of partition {partition} under {jobs}"
    return found[0]


@pytest.mark.e2e
def test_reframe_ran_both_partitions_and_its_gate_judged_them(local_fleet):
    proc = local_fleet["proc"]
    text = proc.stdout
    assert proc.returncode == 1, text[-3000:] + proc.stderr[-3000:]  # the gate failed local:cpu1, as it must
    assert re.search(r"\[ +OK \] \(\d/2\) RooflineSuite .*@local:cpu\+builtin", text), text[-3000:]
    assert re.search(r"\[ +FAIL \] \(\d/2\) RooflineSuite .*@local:cpu1\+builtin", text), text[-3000:]
    assert re.search(r"Failing phase: performance", text) and re.search(
        r"batch1_gbps=[\d.e+-]+ GB/s, expected 1000000", text
    )
    gate = text.split("== ReFrame's performance gate")[1]  # run.py repeats ReFrame's verdict at the end
    value = r"[\d.]+(?:e[+-]?\d+)?"
    for figure in ("batch512_gflops", "observed_crossover"):  # no reference: logged for both partitions
        assert len(re.findall(rf"^P: {figure}: {value} ", gate, re.M)) == 2, gate
    assert re.search(rf"^P: batch1_gbps: {value} GB/s \(r:1e-06, l:-0.5, u:None\)", gate, re.M), gate  # cpu passed
    assert re.search(rf"Reason: performance error: .*batch1_gbps={value} GB/s, expected 1000000", gate), gate
    drafted = jobs.load_references(local_fleet["draft"])  # the figures measured, ready to review and gate on
    assert sorted(drafted) == ["local:cpu", "local:cpu1"] and len(drafted["local:cpu"]) == 4


@pytest.mark.e2e
def test_each_partition_is_its_own_machine(local_fleet):
    for machine, shard in local_fleet["shards"].items():
        res = read_results(shard)
        assert list(res.machines) == [machine]  # one job, one machine, kept in ReFrame's output folder
        assert res.machines[machine].info["machine"] == machine
    merged = read_results(local_fleet["results"])
    assert sorted(merged.machines) == MACHINES  # each job merged into the shared folder as it ended
    assert merged.machines["local.cpu1"].info["blas_threads"] == "1"  # the partition's environment reached the job
    for m in merged.machines.values():
        run_ = m.run(m.latest())
        assert run_.value("decode.DecodeDRAM.track_gflops", n=256, batch=512) > 0
        assert not [b for b in run_.benchmarks() if b.startswith(jobs.CUDA_CLASS)]  # CPU partitions: no CUDA class


@pytest.mark.e2e
def test_asv_published_both_machines(local_fleet):
    index = json.loads((local_fleet["out"] / "html" / "index.json").read_text())
    assert index["params"]["machine"] == MACHINES
    graphs = {p["machine"] for p in index["graph_param_list"]}
    assert graphs == set(MACHINES)
    assert "published:" in local_fleet["proc"].stdout


@pytest.mark.e2e
def test_compare_tables_both_machines(local_fleet):
    table = (local_fleet["out"] / "compare.txt").read_text()
    rows = {line.strip().split("  ")[0]: line.split() for line in table.splitlines()}
    assert rows["machine"][-2:] == MACHINES
    assert "n/a" not in rows["n=256 batch=1"] and "n/a" not in rows["n=256 batch=512"], table
    assert table in local_fleet["proc"].stdout  # run.py ends with it
    report = run([sys.executable, "-m", "roofline", "report", "--results", local_fleet["results"], "--machine",
                  "local.cpu1", "--allow-busy"], local_fleet["repo"], local_fleet["env"])  # fmt: skip
    assert report.returncode == 0 and "decode, weights from DRAM" in report.stdout, report.stderr


def contents(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def one_line_exit_2(capsys, *args) -> str:
    rc = main(["merge", *map(str, args)])
    out, err = capsys.readouterr()
    assert rc == 2 and len(err.strip().splitlines()) == 1 and err.startswith("roofline: error: "), (rc, out, err)
    return err


@pytest.mark.e2e
def test_merge_the_jobs_shards_plus_a_conflicting_third(local_fleet, capsys, tmp_path):
    cpu, cpu1 = (local_fleet["shards"][m] for m in MACHINES)
    held = {p: snapshot(p) for p in (cpu, cpu1)}
    # a third shard made by hand: local.cpu1 at the same commit and environment, one figure changed
    third = tmp_path / "third"
    shutil.copytree(cpu1, third)
    (result,) = [p for p in (third / "local.cpu1").glob("*.json") if p.name != "machine.json"]
    doc = json.loads(result.read_text())
    row = doc["results"]["decode.DecodeDRAM.track_gflops"]
    row[0] = [v * 2 for v in row[0]]
    result.write_text(json.dumps(doc))

    dest = tmp_path / "merged"
    assert main(["merge", str(cpu), str(dest)]) == 0  # DEST starts with one machine
    before = snapshot(dest)
    err = one_line_exit_2(capsys, cpu1, third, dest)
    assert "conflict: local.cpu1/" in err and "differs between shards" in err
    assert snapshot(dest) == before  # refused: nothing written

    assert main(["merge", str(cpu1), str(dest)]) == 0
    after = snapshot(dest)
    assert all(after[k] == v for k, v in before.items())  # nothing already in DEST lost or changed
    for machine, shard in local_fleet["shards"].items():  # verified: every job's file, byte for byte
        for f in (shard / machine).iterdir():
            assert (dest / machine / f.name).read_bytes() == f.read_bytes()
    assert contents(dest) == contents(local_fleet["results"])  # what the jobs staged into the shared folder

    # bad inputs: one line, exit 2, DEST as it was
    wrong_suite = tmp_path / "wrong-suite"
    shutil.copytree(cpu, wrong_suite)
    suite = json.loads((wrong_suite / "benchmarks.json").read_text())
    suite["decode.DecodeDRAM.track_gflops"]["unit"] = "tokens/s"  # another quantity (another version would merge)
    (wrong_suite / "benchmarks.json").write_text(json.dumps(suite))
    state = snapshot(dest)
    assert "does not exist" in one_line_exit_2(capsys, cpu, tmp_path / "no-such-shard", dest)
    assert "incompatible suites" in one_line_exit_2(capsys, wrong_suite, dest)
    assert "differs from DEST's" in one_line_exit_2(capsys, third, dest)
    assert "cannot write" in one_line_exit_2(capsys, cpu, "/proc/roofline-merged")
    assert "inside the shard" in one_line_exit_2(capsys, cpu, cpu / "merged")
    assert snapshot(dest) == state

    # --force takes the third's file; DEST's is kept aside, not lost
    assert main(["merge", "--force", str(third), str(dest)]) == 0
    assert (dest / "local.cpu1" / result.name).read_bytes() == result.read_bytes()
    (displaced,) = tmp_path.glob("merged.displaced-*")
    assert (displaced / "local.cpu1" / result.name).read_bytes() == state[f"local.cpu1/{result.name}"][2]
    assert all(snapshot(p) == held[p] for p in (cpu, cpu1))  # the shards were never written


@pytest.mark.e2e
def test_bad_merge_input_in_a_real_process(local_fleet, tmp_path):
    proc = run([sys.executable, "-m", "roofline", "merge", local_fleet["shards"]["local.cpu"], tmp_path / "x" / "y"],
               local_fleet["repo"], local_fleet["env"])  # fmt: skip
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr


@pytest.mark.e2e
def test_a_job_whose_results_conflict_fails_and_writes_nothing(local_fleet, tmp_path):
    """local.cpu run again at the same commit, into a shared folder that holds its first results."""
    shared = tmp_path / "shared"
    shutil.copytree(local_fleet["results"], shared)
    held = snapshot(shared)
    cmd = [Path(sys.executable).with_name("reframe"), "-C", "fleet/config/local.py", "-c", "fleet/roofline_check.py"]
    # a figure the first job recorded, measured again: the same machine, commit and benchmark, another value
    cmd += ["--system", "local:cpu", "-r", "--nocolor", "-S", f"results_dir={shared}", "-S", "bench=MemoryBandwidth"]
    cmd += ["-S", "allow_busy=true"]  # beside other work: a busy machine would stop the job before the merge
    proc = run([*cmd, "--prefix", tmp_path / "rfm"], local_fleet["repo"], local_fleet["env"])
    assert proc.returncode == 1, proc.stdout[-3000:]
    assert re.search(r"Reason: sanity error: merging into .*: conflict: local.cpu/", proc.stdout), proc.stdout[-3000:]
    assert snapshot(shared) == held  # the shared folder as it was
    assert list((tmp_path / "rfm" / "stage").rglob("results/local.cpu/machine.json"))  # the job's shard kept
    # (-S force=true passes force to the same merge: roofline merge --force, tested in test_merge.py)


@pytest.mark.e2e
@pytest.mark.parametrize("config, system", [("slurm", "cluster"), ("ssh", "workstations")])
def test_the_untested_configurations_load_and_generate_jobs(tmp_path, config, system):
    pytest.importorskip("reframe", reason="reframe-hpc (the test extra)")
    reframe = Path(sys.executable).with_name("reframe")
    env = {**asv_env(ROOT, tmp_path, tmp_path / "cache"), "TMPDIR": str(tmp_path)}
    base = [reframe, "-C", ROOT / "fleet" / "config" / f"{config}.py", "-c", ROOT / "fleet" / "roofline_check.py"]
    base += ["--system", system, "--nocolor", "-S", f"results_dir={tmp_path / 'results'}"]
    dry = run([*base, "--dry-run", "--prefix", tmp_path / "rfm"], ROOT, env)  # loads, concretizes, writes jobs
    assert dry.returncode == 0, dry.stdout[-3000:] + dry.stderr[-3000:]
    partitions = re.findall(rf"DRY +\] RooflineSuite /\w+ @{system}:(\w+)\+builtin", dry.stdout)
    assert len(partitions) == 2, dry.stdout
    scripts = {p.parts[-4]: p.read_text() for p in (tmp_path / "rfm").rglob("rfm_job.sh")}
    assert sorted(scripts) == sorted(partitions)
    for partition, script in scripts.items():
        machine = jobs.machine_name(system, partition)
        assert f"-m roofline bench --python-same --machine {machine} " in script
        assert "rev-parse --absolute-git-dir" in script
    if config == "slurm":
        assert "#SBATCH --partition=gpu" in scripts["gpu"] and "#SBATCH --gres=gpu:1" in scripts["gpu"]
        assert "#SBATCH --exclusive" in scripts["cpu"]
        assert "(?!backends\\.CudaDecode\\.)" in scripts["cpu"]  # CPU partitions leave the CUDA class out
        assert "--bench" not in scripts["gpu"]  # GPU partitions run the whole suite, CUDA class included
    assert not (tmp_path / "results").exists()  # a dry run merges nothing
