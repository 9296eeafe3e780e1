"""The JavaScript and CSS that asv 0.6.6's published HTML loads from CDNs, taken from the npm registry.

asv's index.html pulls jQuery, flot, bootstrap and three small plugins from code.jquery.com,
cdnjs and jsdelivr. Where those cannot be reached (CI, this project's machines) the browser test
serves the same libraries from a local folder that ``fetch`` fills with ``npm pack``. Where the
npm file is byte-identical to the CDN's, the page's integrity (SRI) check still passes; cdnjs's
own minified builds of flot 0.8.3 and stupidtable 1.0.1 are not on npm, so those come as flot's
unminified 0.8.3 source and stupidtable 1.1.3 (the nearest published), and the test drops the
integrity attribute of exactly those tags (it checks which by hashing).

Usage: python tools/asv_offline_assets.py fetch DEST
"""

from __future__ import annotations

import base64
import hashlib
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

#: CDN URL in asv's index.html → (npm package@version, file inside the package).
ASSETS = {
    "https://code.jquery.com/jquery-3.3.1.min.js": ("jquery@3.3.1", "dist/jquery.min.js"),
    "https://cdnjs.cloudflare.com/ajax/libs/flot/0.8.3/jquery.flot.min.js": ("flot@0.8.3", "jquery.flot.js"),
    "https://cdnjs.cloudflare.com/ajax/libs/flot/0.8.3/jquery.flot.time.min.js": ("flot@0.8.3", "jquery.flot.time.js"),
    "https://cdnjs.cloudflare.com/ajax/libs/flot/0.8.3/jquery.flot.selection.min.js": (
        "flot@0.8.3",
        "jquery.flot.selection.js",
    ),
    "https://cdnjs.cloudflare.com/ajax/libs/flot/0.8.3/jquery.flot.categories.min.js": (
        "flot@0.8.3",
        "jquery.flot.categories.js",
    ),
    "https://cdn.jsdelivr.net/npm/flot-orderbars@1.0.0/js/jquery.flot.orderBars.js": (
        "flot-orderbars@1.0.0",
        "js/jquery.flot.orderBars.js",
    ),
    "https://cdnjs.cloudflare.com/ajax/libs/stupidtable/1.0.1/stupidtable.min.js": (
        "stupid-table-plugin@1.1.3",
        "stupidtable.min.js",
    ),
    "https://cdnjs.cloudflare.com/ajax/libs/blueimp-md5/2.19.0/js/md5.min.js": ("blueimp-md5@2.19.0", "js/md5.min.js"),
    "https://cdn.jsdelivr.net/npm/bootstrap@3.1.1/dist/js/bootstrap.min.js": (
        "bootstrap@3.1.1",
        "dist/js/bootstrap.min.js",
    ),
    "https://cdn.jsdelivr.net/npm/bootstrap@3.1.1/dist/css/bootstrap.min.css": (
        "bootstrap@3.1.1",
        "dist/css/bootstrap.min.css",
    ),
}


def local_path(dest: Path, url: str) -> Path | None:
    """Where ``fetch`` put the file standing in for ``url``; None for a URL not in ASSETS."""
    if url not in ASSETS:
        return None
    package, inner = ASSETS[url]
    return dest / package / inner


def sri(data: bytes, algorithm: str) -> str:
    """A subresource-integrity string, e.g. 'sha256-…'."""
    return f"{algorithm}-{base64.b64encode(hashlib.new(algorithm, data).digest()).decode()}"


def fetch(dest: Path) -> None:
    """``npm pack`` each package once and unpack it under ``dest/<package@version>/``."""
    npm = shutil.which("npm")
    if npm is None:
        raise SystemExit("asv_offline_assets: npm not found")
    for package in sorted({p for p, _ in ASSETS.values()}):
        target = dest / package
        if all(local_path(dest, u).is_file() for u, (p, _) in ASSETS.items() if p == package):
            continue
        with tempfile.TemporaryDirectory() as tmp:
            out = subprocess.run(
                [npm, "pack", "--silent", "--pack-destination", tmp, package],
                capture_output=True,
                text=True,
                timeout=300,
            )
            tarballs = list(Path(tmp).glob("*.tgz"))
            if out.returncode != 0 or not tarballs:
                raise SystemExit(f"asv_offline_assets: npm pack {package} failed: {out.stderr.strip()[-300:]}")
            if target.exists():
                shutil.rmtree(target)
            with tarfile.open(tarballs[0]) as tar:
                tar.extractall(target / "_unpacked", filter="data")
            (target / "_unpacked" / "package").rename(target / "pkg")
            for path in (target / "pkg").rglob("*"):
                if path.is_file():
                    rel = path.relative_to(target / "pkg")
                    (target / rel).parent.mkdir(parents=True, exist_ok=True)
                    path.rename(target / rel)
            shutil.rmtree(target / "_unpacked", ignore_errors=True)
            shutil.rmtree(target / "pkg", ignore_errors=True)
    missing = [u for u in ASSETS if not local_path(dest, u).is_file()]
    if missing:
        raise SystemExit(f"asv_offline_assets: not found after fetching: {', '.join(missing)}")


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] != "fetch":
        raise SystemExit("usage: python tools/asv_offline_assets.py fetch DEST")
    fetch(Path(sys.argv[2]))
    print(f"asv_offline_assets: {len(ASSETS)} files under {sys.argv[2]}")
