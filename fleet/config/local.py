"""ReFrame configuration: this machine as two fleet members on the local scheduler (tested by make test).

Partition ``cpu`` runs the suite with every core; ``cpu1`` with the BLAS on one thread, a second
"machine type" on the same box (asv names them ``local.cpu`` and ``local.cpu1``). Where an NVIDIA
GPU is present a ``gpu`` partition (feature ``gpu``: the CUDA class runs there) is added.
Run the partitions one after the other (``--exec-policy=serial``): they share the machine.
"""

from pathlib import Path

ONE_THREAD = [[name, "1"] for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")]


def _partition(name: str, descr: str, **extra) -> dict:
    return {"name": name, "descr": descr, "scheduler": "local", "launcher": "local", "environs": ["builtin"], **extra}


partitions = [
    _partition("cpu", "every core"),
    _partition("cpu1", "the BLAS on one thread", env_vars=ONE_THREAD),
]
if Path("/dev/nvidiactl").exists():
    partitions.append(_partition("gpu", "the NVIDIA GPU (CUDA class)", features=["gpu"]))

site_configuration = {
    "systems": [
        {
            "name": "local",
            "descr": "this machine",
            "hostnames": [".*"],
            "modules_system": "nomod",
            "partitions": partitions,
        }
    ],
}
