"""What `roofline bench` asks of `asv run` to keep a default run within its minutes (issue 39): the forkserver
where no CUDA device is here, and the twins' samples of a make bench run."""

from __future__ import annotations

from pathlib import Path

import pytest

from roofline import bench, host


class Asked(Exception):
    pass


@pytest.mark.parametrize("device", [False, True])
def test_asv_run_forks_its_benchmarks_unless_a_cuda_device_is_here(device, monkeypatch, tmp_path):
    monkeypatch.setattr(host, "gpu_present", lambda: device)
    asked = []

    def asv(*args, env=None):
        asked.append(args)
        raise Asked

    monkeypatch.setattr(bench, "_asv", asv)
    monkeypatch.setattr(bench, "asv_selection", lambda b: [])
    with pytest.raises(Asked):
        bench._run(tmp_path / "results", tmp_path / "html", "m", "c0ffee", True, None, ["stage"])
    (args,) = asked
    assert args[0] == "run"
    assert ("--launch-method" in args) is not device  # spawn, asv.conf.json's, where CUDA is: fork breaks it
    if not device:
        assert args[args.index("--launch-method") + 1] == "forkserver"
    attributes = [args[i + 1] for i, a in enumerate(args) if a == "-a"]
    assert attributes == ["rounds=1", "repeat=(5,8,0.8)"]  # one round of the twins, 5 to 8 samples


def test_the_config_keeps_spawn_for_asv_by_hand():
    text = (Path(__file__).resolve().parents[1] / "asv.conf.json").read_text()
    assert '"launch_method": "spawn"' in text
