import stat

import pytest

from roofline import host
from roofline.errors import BadInput


def _sysfs(root, cpus, entries):
    """A fake /sys/devices/system/cpu: ``entries`` are (level, type, size, sharing sets) per index."""
    for cpu in cpus:
        for i, (level, kind, size, sets) in enumerate(entries):
            d = root / f"cpu{cpu}" / "cache" / f"index{i}"
            d.mkdir(parents=True)
            (d / "level").write_text(f"{level}\n")
            (d / "type").write_text(f"{kind}\n")
            (d / "size").write_text(f"{size}\n")
            shared = next(s for s in sets if cpu in s)
            (d / "shared_cpu_list").write_text(f"{min(shared)}-{max(shared)}\n")
    return root


#: Four cores with private L1d, L1i and L2, and two L3 instances (a two-CCX EPYC, or two sockets).
PRIVATE = [{0}, {1}, {2}, {3}]
TWO_L3 = [
    (1, "Data", "48K", PRIVATE),
    (1, "Instruction", "64K", PRIVATE),
    (2, "Unified", "2048K", PRIVATE),
    (3, "Unified", "32M", [{0, 1}, {2, 3}]),
]


def test_cache_topology_counts_distinct_instances_of_the_cpus_in_use(tmp_path):
    root = _sysfs(tmp_path, range(4), TWO_L3)
    levels = host.cache_topology(root, cpus=(0, 1, 2, 3))
    assert [(c.name, c.kind, c.size_bytes, c.instances) for c in levels] == [
        ("L1", "Data", 48 * 2**10, 4),
        ("L2", "Unified", 2 * 2**20, 4),
        ("L3", "Unified", 32 * 2**20, 2),
    ]
    assert levels[-1].aggregate_bytes == 64 * 2**20
    assert levels[-1].shared_cpus == ((0, 1), (2, 3))
    # Two cores of one L3 instance hold one L3, not two.
    l3 = host.cache_topology(root, cpus=(0, 1))[-1]
    assert (l3.instances, l3.aggregate_bytes) == (1, 32 * 2**20)
    # One core of each instance holds both.
    assert host.cache_topology(root, cpus=(0, 2))[-1].aggregate_bytes == 64 * 2**20


def test_llc_is_the_aggregate_of_the_highest_level(tmp_path, monkeypatch):
    monkeypatch.delenv("ROOFLINE_LLC_BYTES", raising=False)
    monkeypatch.setattr(host, "_affinity", lambda: {0, 1, 2, 3})
    size, source = host.llc_bytes(_sysfs(tmp_path, range(4), TWO_L3))
    assert size == 64 * 2**20
    assert "(L3) × 2 instances" in source


def test_this_machines_topology_matches_its_llc(monkeypatch):
    monkeypatch.delenv("ROOFLINE_LLC_BYTES", raising=False)
    levels = host.cache_topology()
    if not levels:
        pytest.skip("this OS does not describe its caches in sysfs")
    assert [c.level for c in levels] == sorted(c.level for c in levels)
    assert host.llc_bytes()[0] == levels[-1].aggregate_bytes
    assert all(c.instances >= 1 and c.size_bytes > 0 for c in levels)


def test_parse_cpu_list():
    assert host.parse_cpu_list("0-3,8,10-11\n") == (0, 1, 2, 3, 8, 10, 11)
    with pytest.raises(BadInput, match="CPU list"):
        host.parse_cpu_list("a-b")


def test_llc_override_and_fallback(tmp_path, monkeypatch):
    monkeypatch.setenv("ROOFLINE_LLC_BYTES", "4M")
    assert host.llc_bytes(tmp_path) == (4 * 2**20, "ROOFLINE_LLC_BYTES")
    monkeypatch.delenv("ROOFLINE_LLC_BYTES")
    monkeypatch.setattr(host.platform, "system", lambda: "Linux")
    size, source = host.llc_bytes(tmp_path / "missing")
    assert size == host.FALLBACK_LLC_BYTES and "fallback" in source


def test_cpu_flags_are_read_from_cpuinfo():
    flags = host.cpu_flags()
    if not flags:
        pytest.skip("no /proc/cpuinfo flags here")
    assert all(isinstance(f, str) and f for f in flags)


@pytest.mark.parametrize("bad", ["", "abc", "-4M", "0", "4T", "1.5M"])
def test_bad_llc_override(monkeypatch, bad):
    monkeypatch.setenv("ROOFLINE_LLC_BYTES", bad)
    with pytest.raises(BadInput, match="ROOFLINE_LLC_BYTES"):
        host.llc_bytes()


def test_parse_size():
    assert host.parse_size("491520K") == 480 * 2**20
    assert host.parse_size("1G") == 2**30
    assert host.parse_size("65536") == 65536


def test_host_facts_records_blas_and_threads():
    facts = host.host_facts()
    assert facts["num_cpu"] >= 1
    assert facts["llc_bytes"] > 0
    assert "thread" in facts["blas"]
    assert facts["blas_threads"] is None or facts["blas_threads"] >= 1


def test_parse_smi_reads_numbers_and_not_available():
    text = "NVIDIA H200, 580.159.04, 1980, 3201, 1980, 3201, 41, 121.50, P0\nbroken line\n"
    rows = host.parse_smi(text)
    assert rows == [
        {
            "name": "NVIDIA H200",
            "driver_version": "580.159.04",
            "clocks.sm": 1980.0,
            "clocks.mem": 3201.0,
            "clocks.max.sm": 1980.0,
            "clocks.max.mem": 3201.0,
            "temperature.gpu": 41.0,
            "power.draw": 121.5,
            "pstate": "P0",
        }
    ]
    assert host.parse_smi("X, 1, [N/A], N/A, 1, 1, 1, 1, P8")[0]["clocks.mem"] is None


def test_gpu_clocks_from_a_fake_nvidia_smi(tmp_path):
    smi = tmp_path / "nvidia-smi"
    smi.write_text("#!/bin/sh\necho 'NVIDIA H200, 580.1, 345, 3201, 1980, 3201, 30, 75.0, P0'\n")
    smi.chmod(smi.stat().st_mode | stat.S_IEXEC)
    clocks = host.gpu_clocks(smi=str(smi))
    assert clocks["clocks.sm"] == 345.0 and clocks["clocks.max.sm"] == 1980.0
    assert host.gpu_clocks(smi=str(tmp_path / "absent")) is None


def test_gpu_facts_none_without_cuda():
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a CUDA device is present: this checks the CPU-only answer")
    assert host.gpu_facts() is None


def test_gpu_facts_ask_torch_only_where_a_device_node_is(monkeypatch):
    """roofline bench files the GPU's name in asv's machine file: importing torch to learn there is none took
    2 s of every run here. No device node: None, torch never asked; a node: torch answers."""
    asked = []

    def torch_absent():
        asked.append(True)
        raise host.BackendUnavailable("no torch here")

    monkeypatch.setattr(host, "import_torch", torch_absent)
    monkeypatch.setattr(host, "gpu_present", lambda: False)
    assert host.gpu_facts() is None and not asked
    monkeypatch.setattr(host, "gpu_present", lambda: True)
    assert host.gpu_facts() is None and asked


def _tasks(root, states):
    """A fake /proc/self/task: one thread per (tid, comm, state)."""
    for tid, comm, state in states:
        (root / str(tid)).mkdir(parents=True)
        (root / str(tid) / "stat").write_text(f"{tid} ({comm}) {state} 1 2 3 4\n")
    return root


def test_running_threads_counts_the_other_threads_in_state_r(tmp_path):
    import threading

    me = threading.get_native_id()
    # a thread's name may hold ") R (": the state is the field after the last ")"
    threads = [(me, "python", "R"), (me + 1, "openblas) R (x", "S"), (me + 2, "omp", "R"), (me + 3, "w", "R")]
    root = _tasks(tmp_path, threads)
    assert host.running_threads(root) == 2  # not this thread, not the sleeping one
    assert host.running_threads(tmp_path / "absent") is None  # the OS does not say


def test_running_threads_sees_a_blas_worker_spin_after_a_call_and_sleep_later():
    """OpenBLAS's idle workers spin (state R) for a while after each call: what settle() waits out."""
    np = pytest.importorskip("numpy")
    from threadpoolctl import threadpool_limits

    from roofline.measure.timing import SETTLE_LIMIT_S, settle

    if host.cpu_count() < 2 or host.running_threads() is None:
        pytest.skip("needs two cores and Linux's /proc")
    a = np.random.default_rng(0).standard_normal((1024, 1024))
    with threadpool_limits(2, user_api="blas"):
        assert settle() < SETTLE_LIMIT_S  # whatever ran before has stopped
        a @ a
        spinning = host.running_threads()
        waited = settle()
        after = host.running_threads()
    assert spinning >= 1 and after == 0 and 0 < waited < SETTLE_LIMIT_S
