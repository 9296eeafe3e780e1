"""What `roofline bench` asks of `asv run` to keep a default run within its minutes (issue 39): the forkserver
where no CUDA device is here, and the twins' samples of a make bench run."""

from __future__ import annotations

from pathlib import Path

import pytest

from roofline import asv_driver, bench, host


class Asked(Exception):
    pass


@pytest.mark.parametrize("device", [False, True])
def test_asv_run_forks_its_benchmarks_unless_a_cuda_device_is_here(device, monkeypatch, tmp_path):
    monkeypatch.setattr(host, "gpu_present", lambda: device)
    asked = []

    def asv(*args, env=None):
        asked.append(args)
        raise Asked

    monkeypatch.setattr(asv_driver, "run_asv", asv)
    monkeypatch.setattr(asv_driver, "asv_selection", lambda b: [])
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


def test_a_run_filed_elsewhere_gives_asv_a_copy_of_its_config_there_and_a_quick_look_its_own(monkeypatch, tmp_path):
    """asv files results where its configuration says; roofline bench --results elsewhere (a quick look's
    .asv/quick/results) gives it a copy of asv.conf.json with those folders, beside it while the run lasts."""
    import json

    from asv.config import Config

    monkeypatch.chdir(tmp_path)
    conf = '{\n  // asv reads comments\n  "version": 1, "repo": ".", "results_dir": "r", "html_dir": "h", '
    conf += '"plugins": [".p"]\n}'
    Path("asv.conf.json").write_text(conf)
    with asv_driver.asv_config(Path("r"), Path("h").absolute()) as args:
        assert args == []  # asv.conf.json's own folders: asv needs no copy
    with asv_driver.asv_config(Path("q/r"), Path("q/h")) as args:
        flag, copy = args
        assert flag == "--config" and Path(copy).parent.resolve() == tmp_path.resolve()  # asv runs in its folder
        assert Config.load(copy).results_dir == str(tmp_path / "q/r")  # asv reads it
        assert json.loads(Path(copy).read_text()) == {
            "version": 1,
            "repo": ".",
            "results_dir": str(tmp_path / "q/r"),
            "html_dir": str(tmp_path / "q/h"),
            "plugins": [".p"],
        }
    assert not Path(copy).exists() and Path("asv.conf.json").read_text() == conf
    monkeypatch.delenv("ROOFLINE_QUICK", raising=False)
    assert asv_driver.folders() == (Path(".asv/results"), Path(".asv/html"))
    monkeypatch.setenv("ROOFLINE_QUICK", "1")
    assert asv_driver.folders() == (Path(".asv/quick/results"), Path(".asv/quick/html"))
    assert asv_driver.folders(Path("mine"), None) == (Path("mine"), Path(".asv/quick/html"))


def test_the_cpu_time_asv_and_its_benchmarks_take_is_not_counted_as_others(monkeypatch):
    """bench and regress watch the cores while asv runs: asv's own CPU time (its children, waited for) is
    the run's, not a neighbour's; without /proc/stat there is no share to give."""
    from roofline.measure import contention

    ticks = iter([0.0, 1.0])
    times = iter(
        [
            contention.CpuTimes(busy=0, steal=0, total=0, running=0, cores=1, clock=0.0),
            contention.CpuTimes(busy=100, steal=0, total=100, running=0, cores=1, clock=1.0),
        ]
    )
    monkeypatch.setattr(contention, "cpu_times", lambda: next(times))
    monkeypatch.setattr(contention, "own_cpu_seconds", lambda: next(ticks))
    monkeypatch.setattr(asv_driver, "run_asv", lambda *args, env=None: 7)
    assert asv_driver.run_asv_watched("run") == (7, 0.0)  # the busy second was asv's own
    times = iter(
        [
            contention.CpuTimes(busy=0, steal=0, total=0, running=0, cores=1, clock=0.0),
            contention.CpuTimes(busy=100, steal=0, total=100, running=0, cores=1, clock=1.0),
        ]
    )
    ticks = iter([0.0, 0.25])
    assert asv_driver.run_asv_watched("run")[1] == pytest.approx(0.75)  # three quarters were another's
    monkeypatch.setattr(contention, "cpu_times", lambda: None)
    ticks = iter([0.0, 0.25])
    assert asv_driver.run_asv_watched("run") == (7, None)
