"""ReFrame configuration for a Slurm cluster with a CPU and a GPU partition (an example: untested here).

make test validates it by loading it (``reframe -C fleet/config/slurm.py --system cluster --list``);
it has not run jobs on a real cluster. Adapt the hostnames, the ``access`` options and the
``extras`` (where the checkout and its Python live on the nodes) to the site. Results return
through the shared filesystem: ReFrame's stage folders are put on it (``--prefix``), and ReFrame,
on the login node, merges each job's shard into ``-S results_dir`` as the job ends.

    reframe -C fleet/config/slurm.py -c fleet/roofline_check.py -r --prefix /shared/roofline/.fleet/reframe \
        -S results_dir=/shared/roofline-results
"""

SHARED = "/shared/roofline"  # a checkout of roofline on the shared filesystem, with its .venv
EXTRAS = {"roofline_root": SHARED, "roofline_python": f"{SHARED}/.venv/bin/python"}

site_configuration = {
    "systems": [
        {
            "name": "cluster",
            "descr": "a Slurm cluster: CPU nodes and GPU nodes",
            "hostnames": [r"login\d*", r"cluster-login.*"],
            "modules_system": "nomod",  # 'lmod' or 'tmod4' where the site uses modules
            "partitions": [
                {
                    "name": "cpu",
                    "descr": "CPU nodes, one whole node per job",
                    "scheduler": "slurm",
                    "launcher": "local",  # roofline bench runs once per node; asv starts its own processes
                    "access": ["--partition=cpu"],
                    "environs": ["builtin"],
                    "max_jobs": 4,
                    "extras": EXTRAS,
                },
                {
                    "name": "gpu",
                    "descr": "GPU nodes: the CUDA class runs here",
                    "scheduler": "slurm",
                    "launcher": "local",
                    "access": ["--partition=gpu", "--gres=gpu:1"],
                    "environs": ["builtin"],
                    "features": ["gpu"],
                    "devices": [{"type": "gpu", "num_devices": 1}],
                    "max_jobs": 4,
                    "extras": EXTRAS,
                },
            ],
        }
    ],
}
