"""``roofline machine --rename OLD NEW --results DIR``: file a machine's recorded runs under another name.

asv files a machine's runs under its name three times: the folder ``DIR/<name>/``, the ``machine`` key of
its ``machine.json`` and the ``machine`` key of every result file's ``params`` (asv publish graphs by
it). A rename rewrites all three together, as ``roofline merge`` writes: in a copy of DIR built beside
it, read back and checked (NEW holds every commit OLD held with the same values, OLD is gone, the other
machines are as they were), then put in place with one rename. A crash leaves DIR as it was.

NEW must be free: a rename never joins two machines' histories (``roofline merge`` does that, with its
conflict rules), so a NEW folder already in DIR is refused before anything is written.
"""

from __future__ import annotations

import errno
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ..errors import BadInput
from . import asv_files
from .asv_files import MACHINE_FILE, AsvFile, MachineFolder
from .machine_file import check_machine_name
from .results import Results, read_results


@dataclass
class Rename:
    """What a rename writes (planned, or done): the new folder's files, and the commits they hold."""

    results: Path
    old: str
    new: str
    #: file name in the new folder → its bytes
    files: dict[str, bytes]
    commits: list[str]
    written: bool = False

    def as_dict(self) -> dict[str, object]:
        return {
            "results": str(self.results),
            "old": self.old,
            "new": self.new,
            "files": sorted(self.files),
            "commits": self.commits,
            "written": self.written,
        }


def _renamed(file: AsvFile, new: str) -> bytes:
    """A file of the folder, as read, with its machine key set to ``new``: machine.json as asv writes it (indented,
    keys sorted), a result file as asv writes it (one line, keys in their order)."""
    path, data = file.path, file.object("renamed")
    if path.name == MACHINE_FILE:
        return asv_files.machine_text({**data, "machine": new}).encode()
    params = data.get("params")
    if not isinstance(params, dict):
        raise BadInput(f"{path} has no params (not an asv 0.6 result file?): nothing was renamed")
    return asv_files.result_text({**data, "params": {**params, "machine": new}}).encode()


def _folder_renamed(folder: MachineFolder, new: str) -> dict[str, bytes]:
    """Every file of a machine's folder as the renamed folder holds it (a file that is no JSON, as it is)."""
    files = {f.path.name: _renamed(f, new) for f in ([folder.info] if folder.info else []) + folder.files}
    others = {p.name: p.read_bytes() for p in folder.others if p.is_file()}
    return dict(sorted({**files, **others}.items()))


def plan_rename(results: Path | str, old: str, new: str) -> Rename:
    """The rename of machine ``old`` to ``new`` in ``results``; reads only. BadInput on an unknown ``old``, a
    ``new`` that is taken or no usable folder name, or a file of ``old`` that cannot be read."""
    results = Path(results)
    res = read_results(results)
    if old not in res.machines:
        raise BadInput(f"no machine {old!r} in {results} (machines: {', '.join(sorted(res.machines))})")
    new = check_machine_name(new)
    if new == old:
        raise BadInput(f"machine {old!r} already has that name")
    if os.path.lexists(results / new):
        raise BadInput(f"{results / new} exists: a rename never joins two machines (roofline merge does)")
    loaded = res.folder.machines[old] if res.folder is not None else asv_files.load_machine(results / old)
    return Rename(results, old, new, _folder_renamed(loaded, new), res.machines[old].commits())


def _verify(tmp: Path, plan: Rename, before: Results) -> None:
    """The built folder reads back with ``new`` in ``old``'s place, every run's values as they were."""
    after = read_results(tmp)
    if plan.old in after.machines or plan.new not in after.machines:
        raise OSError(errno.EIO, f"{plan.new} is not in {plan.old}'s place after renaming")
    for name, machine in before.machines.items():
        moved = after.machines[plan.new if name == plan.old else name]
        for commit, run in machine.runs.items():
            if commit not in moved.runs or moved.runs[commit].recorded != run.recorded:
                raise OSError(errno.EIO, f"machine {moved.name}'s run {commit[:8]} changed while renaming")


def apply_rename(plan: Rename) -> Rename:
    """Carry out ``plan`` (see the module docstring); BadInput, DIR left as it was, when it cannot."""
    results = Path(os.path.realpath(plan.results))
    with asv_files.locked(results):
        before = read_results(results)
        if os.path.lexists(results / plan.new) or plan.old not in before.machines:
            raise BadInput(f"{plan.results} changed while the rename was planned; nothing written, run it again")
        tmp = Path(tempfile.mkdtemp(prefix=f".{results.name}.renaming-", dir=results.parent))
        try:
            shutil.copytree(results, tmp, symlinks=True, dirs_exist_ok=True, ignore=lambda d, _: (
                [plan.old] if Path(d) == results else []))  # fmt: skip
            (tmp / plan.new).mkdir()
            for name, data in plan.files.items():
                (tmp / plan.new / name).write_bytes(data)
            _verify(tmp, plan, before)
            os.chmod(tmp, results.stat().st_mode & 0o7777)
            asv_files.sync_tree(tmp)
            asv_files.swap_in(tmp, results)
        except OSError as exc:
            raise BadInput(f"cannot rename in {plan.results}: {exc.strerror or exc}; left as it was") from None
        finally:
            shutil.rmtree(tmp, ignore_errors=True)  # after the swap: DIR as it was
    plan.written = True
    return plan
