"""The machine profiles (tests/machine_profiles.py) read through roofline.host as each machine's OS said."""

from __future__ import annotations

import pytest

from roofline import host

from .machine_profiles import PROFILES

#: profile → (vendor, family, model, stepping, L1d per core, L2 per core, aggregate LLC, AVX-512, AMX)
EXPECTED = {
    "xeon-amx": ("GenuineIntel", 6, 207, 2, 48 * 2**10, 2 * 2**20, 300 * 2**20, True, True),
    "epyc-zen4": ("AuthenticAMD", 25, 17, 1, 32 * 2**10, 2**20, 32 * 2**20, True, False),
    "epyc-zen3": ("AuthenticAMD", 25, 1, 1, 32 * 2**10, 2**19, 32 * 2**20, False, False),
}


@pytest.mark.parametrize("profile", PROFILES, ids=str)
def test_each_profile_reads_as_its_machine(profile):
    vendor, family, model, stepping, l1, l2, llc, avx512, amx = EXPECTED[profile.name]
    assert profile.signature == {"vendor": vendor, "cpu family": family, "model": model, "stepping": stepping}
    l1d, l2u, l3 = profile.caches()
    assert (l1d.name, l1d.size_bytes, l1d.instances) == ("L1", l1, 2)  # private per core
    assert (l2u.name, l2u.size_bytes, l2u.instances) == ("L2", l2, 2)
    assert (l3.name, l3.instances, l3.shared_cpus) == ("L3", 1, ((0, 1),))  # one L3 over both cores
    assert profile.llc_bytes == llc and profile.llc_level == 3
    assert ("avx512f" in profile.flags, "amx_tile" in profile.flags) == (avx512, amx)
    assert {"avx2", "fma"} <= profile.flags


@pytest.mark.parametrize("profile", PROFILES, ids=str)
def test_as_this_machine_makes_host_answer_as_the_profile(profile, monkeypatch, tmp_path):
    monkeypatch.delenv("ROOFLINE_LLC_BYTES", raising=False)
    profile.as_this_machine(monkeypatch, tmp_path)
    assert host.cpu_signature() == profile.signature and host.cpu_model() == profile.model_name
    assert host.cpu_flags() == profile.flags and host.cpu_count() == profile.cores
    assert host.llc_bytes()[0] == profile.llc_bytes
    monkeypatch.setenv("ROOFLINE_LLC_BYTES", "1M")  # the override still wins, as on the machine itself
    assert host.llc_bytes() == (2**20, "ROOFLINE_LLC_BYTES")


def test_readers_take_cpuinfo_text_and_keep_their_defaults():
    text = "vendor_id\t: GenuineIntel\nmodel name\t: X\nflags\t\t: avx2 fma\n"
    assert host.cpu_flags(text) == {"avx2", "fma"} and host.cpu_model(text) == "X"
    assert host.cpu_model("") == "" and host.cpu_flags("") == frozenset()
    assert host.cpu_model() and isinstance(host.cpu_flags(), frozenset)  # this machine's, as before
