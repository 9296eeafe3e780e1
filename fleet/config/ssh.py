"""ReFrame configuration for workstations reached over ssh (an example: untested here).

make test validates it by loading it (``reframe -C fleet/config/ssh.py --system workstations
--list``); it has not run jobs over ssh. Each workstation is a partition of its own, so each gets
its own asv machine name (``workstations.ws_a``). ReFrame copies a job's stage folder to the host
(rsync or scp), runs it there with ``bash -l`` and copies the folder back; then, here, it merges
the job's results into ``-S results_dir``: results come back by copy and merge, no shared
filesystem needed. Each host needs key-based ssh (BatchMode) and a checkout of roofline with its
.venv at ``roofline_root``.

    reframe -C fleet/config/ssh.py -c fleet/roofline_check.py --system workstations -r \
        -S results_dir=$HOME/roofline-results
"""


def _workstation(name: str, host: str, root: str, **extra) -> dict:
    return {
        "name": name,
        "descr": f"{host} over ssh",
        "scheduler": "ssh",
        "launcher": "local",
        "sched_options": {"ssh_hosts": [host]},
        "environs": ["builtin"],
        "max_jobs": 1,
        "extras": {"roofline_root": root, "roofline_python": f"{root}/.venv/bin/python"},
        **extra,
    }


site_configuration = {
    "systems": [
        {
            "name": "workstations",
            "descr": "workstations reached over ssh from the machine running ReFrame",
            "hostnames": [".*"],  # the controlling machine; pick this system with --system workstations
            "modules_system": "nomod",
            "partitions": [
                _workstation("ws_a", "ws-a.example.org", "/home/bench/roofline"),
                _workstation("ws_b", "ws-b.example.org", "/home/bench/roofline", features=["gpu"]),
            ],
        }
    ],
}
