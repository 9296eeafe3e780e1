"""Fetch asv 0.6.6's web libraries from the npm registry into roofline/suite/asv_www, or check the copies there.

roofline ships the JavaScript and CSS that asv's published index.html loads from CDNs (jQuery,
flot and plugins, bootstrap), so that ``make bench``'s HTML works offline; which file stands in
for which CDN address, and each file's SHA-256, is written once in
``roofline/suite/offline_html.py`` (``ASSETS``). This tool is how those files were made, and how
to make them again: it runs ``npm pack`` per package (npm and the registry are needed here, and
only here: a user's ``make bench`` needs neither), copies each file, refuses one whose SHA-256 is
not the pinned one, and writes the packages' licence texts to LICENSES.txt.

Usage:
    python tools/asv_offline_assets.py vendor     # fetch from npm, check, write roofline/suite/asv_www
    python tools/asv_offline_assets.py check      # check the shipped files against their pins
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from roofline.suite.offline_html import ASSETS, WWW, check_assets  # noqa: E402

#: Each package's licence file inside its npm tarball (flot-orderbars carries its MIT notice in its header).
LICENCES = {
    "jquery@3.3.1": "LICENSE.txt",
    "flot@0.8.3": "LICENSE.txt",
    "flot-orderbars@1.0.0": "js/jquery.flot.orderBars.js",
    "stupid-table-plugin@1.1.3": "LICENSE",
    "blueimp-md5@2.19.0": "LICENSE.txt",
    "bootstrap@3.1.1": "LICENSE",
}


def npm_pack(package: str, dest: Path) -> Path:
    """``npm pack`` one package and unpack it; returns the folder holding its files."""
    npm = shutil.which("npm")
    if npm is None:
        raise SystemExit("asv_offline_assets: npm not found (needed only to fetch the libraries again)")
    out = subprocess.run(
        [npm, "pack", "--silent", "--pack-destination", str(dest), package], capture_output=True, text=True, timeout=300
    )
    tarballs = list(dest.glob("*.tgz"))
    if out.returncode != 0 or not tarballs:
        raise SystemExit(f"asv_offline_assets: npm pack {package} failed: {out.stderr.strip()[-300:]}")
    with tarfile.open(tarballs[0]) as tar:
        tar.extractall(dest / "unpacked", filter="data")
    return dest / "unpacked" / "package"


def vendor() -> None:
    licences = []
    with tempfile.TemporaryDirectory() as tmp:
        packages = {}
        for package in sorted({a.package for a in ASSETS.values()}):
            folder = Path(tmp) / package
            folder.mkdir()
            packages[package] = npm_pack(package, folder)
        for url, asset in ASSETS.items():
            data = (packages[asset.package] / asset.inner).read_bytes()
            if hashlib.sha256(data).hexdigest() != asset.sha256:
                raise SystemExit(f"asv_offline_assets: {asset.package}/{asset.inner} is not the pinned file for {url}")
            (WWW / asset.file).write_bytes(data)
        for package, name in LICENCES.items():
            text = (packages[package] / name).read_text(encoding="utf-8")
            if name.endswith(".js"):
                text = text.split("*/", 1)[0] + "*/\n"
            licences.append(f"{'=' * 78}\n{package} ({name})\n{'=' * 78}\n{text.rstrip()}\n")
    head = "The libraries asv 0.6.6's HTML loads, as published on npm; see roofline/suite/offline_html.py.\n\n"
    (WWW / "LICENSES.txt").write_text(head + "\n".join(licences), encoding="utf-8")


def main(argv: list[str]) -> int:
    if argv == ["vendor"]:
        vendor()
    elif argv != ["check"]:
        raise SystemExit("usage: python tools/asv_offline_assets.py vendor|check")
    problems = check_assets()
    for problem in problems:
        print(f"asv_offline_assets: {problem}", file=sys.stderr)
    if not problems:
        print(f"asv_offline_assets: {len(ASSETS)} files in {WWW} are the pinned ones")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
