#!/usr/bin/env python3
"""Set up a local virtualenv and run the project's two jobs.

    python3 scripts/dev.py run     # install, run the bundled scenarios offline, write their report
    python3 scripts/dev.py test    # install, then run the whole test suite

``run`` writes the HTML report of the scenarios' runs (with their loop-behaviour coverage) to
``build/report/scenarios.html`` and prints its path.

Only the standard library is used here, so this works on a fresh machine with Python >= 3.11 and
pip.  The virtualenv lives in ``.venv`` and is reused; installation is skipped when
``pyproject.toml`` has not changed since the last successful install.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV = ROOT / ".venv"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
PY = BIN / ("python.exe" if os.name == "nt" else "python")
STAMP = VENV / ".installed"
REPORT = ROOT / "build" / "report" / "scenarios.html"


def ensure_env() -> None:
    if sys.version_info < (3, 11):  # noqa: UP036 - this script may be started by an older python3
        sys.exit(f"Python >= 3.11 is required (this is {sys.version.split()[0]})")
    if not PY.exists():
        print(f"creating {VENV} ...", flush=True)
        venv.EnvBuilder(with_pip=True).create(VENV)
    digest = hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()
    if STAMP.exists() and STAMP.read_text() == digest:
        return
    print("installing openprogram with its test dependencies ...", flush=True)
    subprocess.run([str(PY), "-m", "pip", "install", "-q", "--upgrade", "pip"], check=True)
    subprocess.run(
        [str(PY), "-m", "pip", "install", "-q", "-e", f"{ROOT}[dev]"], check=True, cwd=ROOT
    )
    STAMP.write_text(digest)


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in {"run", "test", "setup"}:
        print(__doc__)
        return 2
    ensure_env()
    job, rest = argv[0], argv[1:]
    if job == "setup":
        return 0
    if job == "run":
        cmd = [str(BIN / "openprogram-testing"), "run", "scenarios/", *run_options(), *rest]
        code = subprocess.call(cmd, cwd=ROOT)
        if REPORT.is_file():
            print(f"report of the bundled scenarios: {REPORT}", flush=True)
        return code
    # Two workers (pytest-xdist) unless the caller chose: the suite is CPU-bound and every test is
    # isolated (its own temporary files, ports and event loops), so this halves CI's time.
    workers = (
        []
        if any(a == "-n" or a.startswith(("-n", "--numprocesses")) for a in rest)
        else ["-n", "2"]
    )
    cmd = [str(PY), "-m", "pytest", "-q", *workers, *rest]
    return subprocess.call(cmd, cwd=ROOT)


def run_options() -> list[str]:
    """What ``run`` adds to ``openprogram-testing run scenarios/``: the HTML report and the
    loop-behaviour coverage table."""
    return ["--html", str(REPORT), "--coverage"]


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
