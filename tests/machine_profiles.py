"""The machines the suite has run on, as profiles a test can feed through roofline.host's readers.

Each profile is what the OS tells about one machine: the first processor's /proc/cpuinfo block
(vendor, family, model, stepping, model name, flags) and the caches as Linux sysfs gives them
(``cpuN/cache/indexK``: level, type, size, shared CPUs), in ``tests/machines/<name>/{cpuinfo,cache}``,
with its cores and memory here. Tests parametrize over them so that every decision that reads the
machine (the name results are filed under, pool sizes, skip reasons) is checked on each::

    @pytest.mark.parametrize("profile", PROFILES, ids=str)
    def test_x(profile): ...

``profile.llc_bytes`` is the aggregate last-level cache as :func:`roofline.host.llc_bytes` reads it from
the profile's sysfs; ``profile.as_this_machine(monkeypatch, tmp_path)`` makes roofline.host answer as that
machine for code that looks the readers up when it runs (``from ..host import x`` inside a function).
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from roofline import host

HERE = Path(__file__).resolve().parent / "machines"


@dataclass(frozen=True)
class MachineProfile:
    """One machine as its OS describes it; ``source`` says where each fact was copied from."""

    name: str
    cores: int
    memory_bytes: int | None
    source: str

    def __str__(self) -> str:
        return self.name

    @cached_property
    def cpuinfo(self) -> str:
        return (HERE / self.name / "cpuinfo").read_text()

    @property
    def signature(self) -> dict[str, object]:
        return host.cpu_signature(self.cpuinfo)

    @property
    def flags(self) -> frozenset[str]:
        return host.cpu_flags(self.cpuinfo)

    @property
    def model_name(self) -> str:
        return host.cpu_model(self.cpuinfo)

    @property
    def cpus(self) -> tuple[int, ...]:
        return tuple(range(self.cores))

    def sysfs(self, root: Path) -> Path:
        """Write the profile's caches under ``root`` as Linux's ``/sys/devices/system/cpu``; returns ``root``."""
        for line in (HERE / self.name / "cache").read_text().splitlines():
            cpu, index, *fields = line.split()
            folder = root / cpu / "cache" / index
            folder.mkdir(parents=True, exist_ok=True)
            for key, _, value in (f.partition("=") for f in fields):
                (folder / ("shared_cpu_list" if key == "shared" else key)).write_text(value + "\n")
        return root

    def caches(self) -> tuple[host.CacheLevel, ...]:
        with tempfile.TemporaryDirectory() as tmp:
            return host.cache_topology(self.sysfs(Path(tmp)), self.cpus)

    @cached_property
    def llc_bytes(self) -> int:
        """The aggregate last-level cache, as :func:`roofline.host.llc_bytes` reads it (no override)."""
        with tempfile.TemporaryDirectory() as tmp:
            return host.llc_bytes(self.sysfs(Path(tmp)), use_override=False, cpus=self.cpus)[0]

    @property
    def llc_level(self) -> int:
        return max(c.level for c in self.caches())

    def as_this_machine(self, monkeypatch, tmp_path: Path) -> None:
        """roofline.host's readers answer as this machine (for code that looks them up when it runs)."""
        root = self.sysfs(tmp_path / "sys-cpu")
        monkeypatch.setattr(host, "cpu_signature", lambda text=None: host_cpu_signature(text or self.cpuinfo))
        monkeypatch.setattr(host, "cpu_flags", lambda text=None: host_cpu_flags(text or self.cpuinfo))
        monkeypatch.setattr(host, "cpu_model", lambda text=None: host_cpu_model(text or self.cpuinfo))
        monkeypatch.setattr(host, "cpu_count", lambda: self.cores)
        monkeypatch.setattr(host, "total_memory_bytes", lambda: self.memory_bytes)
        monkeypatch.setattr(host, "cache_topology", lambda r=root, cpus=self.cpus: host_cache_topology(r, cpus))
        monkeypatch.setattr(
            host, "llc_bytes", lambda r=root, use_override=True, cpus=self.cpus: host_llc_bytes(r, use_override, cpus)
        )


# the readers themselves, kept before any test patches them
host_cpu_signature, host_cpu_flags, host_cpu_model = host.cpu_signature, host.cpu_flags, host.cpu_model
host_cache_topology, host_llc_bytes = host.cache_topology, host.llc_bytes

XEON_AMX = MachineProfile(
    "xeon-amx",
    cores=2,
    memory_bytes=25324949504,
    source="a 2-core KVM guest, Intel Xeon family 6 model 207 (Emerald Rapids) with AVX-512 and AMX: lscpu, "
    "/proc/cpuinfo's flags, cpu0's sysfs caches (cpu1's private L1 and L2 as lscpu counts them: 2 instances) "
    "and free -b, as recorded on it",
)
EPYC_ZEN4 = MachineProfile(
    "epyc-zen4",
    cores=2,
    memory_bytes=25276182528,
    source="a 2-core KVM guest, AMD EPYC family 25 model 17 (Zen 4, AVX-512): /proc/cpuinfo's first block, "
    "sysfs cpu0 and cpu1 caches and free -b, as read on it",
)
EPYC_ZEN3 = MachineProfile(
    "epyc-zen3",
    cores=2,
    memory_bytes=None,  # not recorded in docs/ or examples/
    source="a 2-core KVM guest, AMD EPYC family 25 model 1 (Zen 3): AVX2, no AVX-512, 32 MiB L3 "
    "(docs/measured/bench-time.md); its flags are the Zen 4 guest's without avx512* and gfni (Zen 4's "
    "additions), its L1d 32 KiB and L2 512 KiB per core Zen 3's (AMD's Milan documentation)",
)

PROFILES = (XEON_AMX, EPYC_ZEN4, EPYC_ZEN3)
