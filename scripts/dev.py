#!/usr/bin/env python3
"""Set up a local virtualenv and run the project's jobs.

    python3 scripts/dev.py run     # install, run the bundled scenarios offline, write their report
    python3 scripts/dev.py test    # install, then run the whole test suite
    python3 scripts/dev.py setup   # install only
    python3 scripts/dev.py lock    # refresh requirements/dev.txt to today's newest releases
    python3 scripts/dev.py deps    # the dependency tests on the newest and the lowest releases
    python3 scripts/dev.py phoenix # a real Phoenix receives a nested run's spans (not in CI)

``run`` writes the HTML report of the scenarios' runs (with their loop-behaviour coverage) to
``build/report/scenarios.html`` and prints its path.

Only the standard library is used here, so this works on a fresh machine with Python >= 3.11 and
pip.  The virtualenv lives in ``.venv`` and is reused.  It is installed from the committed lock,
``requirements/dev.txt`` (every package pinned, made by ``uv pip compile``), so a new upstream
release changes nothing until someone runs ``lock`` and commits the result; installation is
skipped while neither ``pyproject.toml`` nor the lock has changed since the last install.

``deps`` checks that the ranges in ``pyproject.toml`` are true: in throwaway virtualenvs it
installs the newest releases and the lowest ones the ranges allow (``uv pip install --resolution
lowest-direct``; once with ``[dev]``, once with ``[providers,testing]`` alone so that the SDKs'
own floors are reached) and runs the tests that touch a dependency.  ``deps --record`` writes the
versions and results into docs/development.md.  ``deps lowest-core`` runs one of the three.

``phoenix`` installs ``arize-phoenix`` (heavy: a server, a database, a UI) with this project in a
throwaway virtualenv and runs ``scripts/phoenix_check.py`` there: a real Phoenix receives a
nested, steered scenario's runs as OpenTelemetry spans and the check reads them back through
Phoenix's client.  ``phoenix --screenshot docs/img/phoenix-trace.png`` also pictures the trace.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
import venv
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV = ROOT / ".venv"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
PY = BIN / ("python.exe" if os.name == "nt" else "python")
STAMP = VENV / ".installed"
REPORT = ROOT / "build" / "report" / "scenarios.html"
LOCK = ROOT / "requirements" / "dev.txt"
TOOLS = ROOT / "requirements" / "tools.in"
DEVDOC = ROOT / "docs" / "development.md"
JOBS = ("run", "test", "setup", "lock", "deps", "phoenix")
INSTALL_RECIPE = "2"  # bump when ensure_env installs differently: the stamp then changes too


def ensure_env() -> None:
    if sys.version_info < (3, 11):  # noqa: UP036 - this script may be started by an older python3
        sys.exit(f"Python >= 3.11 is required (this is {sys.version.split()[0]})")
    if not PY.exists():
        print(f"creating {VENV} ...", flush=True)
        venv.EnvBuilder(with_pip=True).create(VENV)
    digest = stamp_digest()
    if STAMP.exists() and STAMP.read_text() == digest:
        return
    print(f"installing openprogram with its test dependencies from {LOCK.name} ...", flush=True)
    # PIP_CONSTRAINT (not only -c) so that the build of the project itself, in pip's isolated
    # build environment, takes the locked setuptools too.
    env = {**os.environ, "PIP_CONSTRAINT": str(LOCK)}
    pip = [str(PY), "-m", "pip", "install", "-q", "-c", str(LOCK)]
    subprocess.run([*pip, "pip"], check=True, env=env)
    subprocess.run([*pip, "-e", f"{ROOT}[dev]"], check=True, cwd=ROOT, env=env)
    STAMP.write_text(digest)


def stamp_digest() -> str:
    """What the installed .venv was made from: the ranges, the lock and the way of installing."""
    h = hashlib.sha256(INSTALL_RECIPE.encode())
    for path in (ROOT / "pyproject.toml", LOCK):
        h.update(path.read_bytes())
    return h.hexdigest()


def lock() -> int:
    """Refresh the lock to the newest releases the ranges allow (then run the tests, commit)."""
    uv = ensure_uv()
    cmd = [
        uv, "pip", "compile", "pyproject.toml", str(TOOLS.relative_to(ROOT)), "--extra", "dev",
        "--python-version", "3.11", "--universal", "--upgrade", "--quiet",
        "--custom-compile-command", "python3 scripts/dev.py lock",
        "-o", str(LOCK.relative_to(ROOT)),
    ]  # fmt: skip
    code = subprocess.call(cmd, cwd=ROOT)
    if code == 0:
        ensure_env()
        print(f"{LOCK.relative_to(ROOT)} refreshed: run the tests, then commit it", flush=True)
    return code


def ensure_uv() -> str:
    """uv from .venv (it is in the dev extra, pinned by the lock); installed alone if missing, so
    that a lock the current ranges no longer fit can still be refreshed."""
    uv = BIN / ("uv.exe" if os.name == "nt" else "uv")
    if not uv.exists():
        if not PY.exists():
            venv.EnvBuilder(with_pip=True).create(VENV)
        pinned = [ln for ln in LOCK.read_text().splitlines() if ln.startswith("uv==")]
        subprocess.run([str(PY), "-m", "pip", "install", "-q", *(pinned or ["uv"])], check=True)
    return str(uv)


# -- deps: the ranges in pyproject.toml, at their newest and their lowest ----------------------

DEPS_TESTS = [
    "tests/providers",
    "tests/emulator",
    "tests/cassettes",
    "tests/harness",
    "tests/runtime/test_telemetry.py",
    "tests/scenarios/test_spans_agree.py",
]
"""The tests that touch a dependency: the adapters on the SDKs, the emulator driven by the SDKs,
the cassettes (vcrpy, the SDKs' transports), the pytest plugin (pytest, pytest-asyncio, syrupy,
typer's CLI), the runs as OpenTelemetry spans (the API, the conventions' names, the SDK; skipped
where the otlp extra is not installed); tests/frameworks is added where the frameworks extra is
installed."""


@dataclass(frozen=True)
class Check:
    name: str
    extras: str
    lowest: bool
    frameworks: bool
    what: str


CHECKS = [
    Check("newest", "dev", False, True, "`[dev]`, newest releases"),
    Check("lowest", "dev", True, True, "`[dev]`, lowest the ranges allow"),
    Check(
        "lowest-core",
        "providers,testing",
        True,
        False,
        "`[providers,testing]` + pytest-asyncio, pytest-recording, lowest (the SDKs' own floors)",
    ),
]


@dataclass
class Outcome:
    check: Check
    versions: dict[str, str]
    summary: str
    code: int


def direct_names() -> list[str]:
    """The distributions pyproject.toml names (its ranges are what ``deps`` checks)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    specs = list(project["dependencies"])
    for name, extra in project["optional-dependencies"].items():
        if name != "bench":
            specs += extra
    names: list[str] = []
    for spec in specs:
        m = re.match(r"[A-Za-z0-9_.\-]+", spec)
        if m and m.group(0) != project["name"] and canon(m.group(0)) not in map(canon, names):
            names.append(m.group(0))
    return names


def canon(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def dev_spec(name: str) -> str:
    """The range the dev extra gives ``name`` (the lowest-core check installs it beside)."""
    dev = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    return next(s for s in dev["dev"] if canon(re.split(r"[<>=!~ \[;]", s)[0]) == canon(name))


def run_check(check: Check, uv: str, workdir: Path, pytest_args: list[str]) -> Outcome:
    where = workdir / check.name
    print(f"\n== {check.name}: {check.what}", flush=True)
    subprocess.run([uv, "venv", "-q", "--python", sys.executable, str(where)], check=True)
    py = where / ("Scripts" if os.name == "nt" else "bin") / "python"
    reqs = [f"-e{ROOT}[{check.extras}]"]
    if not check.frameworks:  # the test plugins the suite needs (asyncio mode; vcr beside ours)
        reqs += [dev_spec("pytest-asyncio"), dev_spec("pytest-recording")]
    install = [uv, "pip", "install", "-q", "--python", str(py), *reqs]
    if check.lowest:
        install += ["--resolution", "lowest-direct"]
    else:
        install += ["--refresh"]  # today's index, not the cache's
    # uv reads no pip configuration: the lock and the machine's pip constraints do not apply here
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "UV_CONSTRAINT"))}
    if subprocess.call(install, cwd=ROOT, env=env) != 0:
        return Outcome(check, {}, "install failed", 1)
    versions = installed_versions(py)
    tests = DEPS_TESTS + (["tests/frameworks"] if check.frameworks else [])
    cmd = [str(py), "-m", "pytest", "-q", "-n", "2", *tests, *pytest_args]
    summary = f"pytest did not finish ({' '.join(tests)})"
    with subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:  # shown as it comes; the last count line is the result
            sys.stdout.write(line)
            if re.search(r"\d+ (passed|failed|errors?)\b", line):
                summary = line.strip().strip("=").strip()
    sys.stdout.flush()
    return Outcome(check, versions, summary, proc.returncode)


def installed_versions(py: Path) -> dict[str, str]:
    code = (
        "import importlib.metadata as m, json, sys\n"
        "out = {}\n"
        "for n in sys.argv[1:]:\n"
        "    try: out[n] = m.version(n)\n"
        "    except m.PackageNotFoundError: pass\n"
        "print(json.dumps(out))\n"
    )
    names = [*direct_names(), "httpcore", "botocore", "pydantic-core", "pip"]
    out = subprocess.run(
        [str(py), "-c", code, *names], check=True, stdout=subprocess.PIPE, text=True
    )
    return dict(json.loads(out.stdout))


def table(outcomes: list[Outcome]) -> str:
    names: list[str] = []
    for o in outcomes:
        names += [n for n in o.versions if n not in names]
    head = "| package | " + " | ".join(o.check.name for o in outcomes) + " |"
    rows = [head, "|" + " --- |" * (len(outcomes) + 1)]
    for n in sorted(names, key=canon):
        cells = [o.versions.get(n, "-") for o in outcomes]
        if len(set(cells)) == 1 and cells[0] == "-":
            continue
        rows.append(f"| {n} | " + " | ".join(cells) + " |")
    rows.append("| **result** | " + " | ".join(f"**{o.summary}**" for o in outcomes) + " |")
    return "\n".join(rows)


BEGIN, END = "<!-- deps:begin -->", "<!-- deps:end -->"


def record(text: str) -> None:
    doc = DEVDOC.read_text()
    if BEGIN not in doc:
        doc = doc.rstrip("\n") + f"\n\n{BEGIN}\n{END}\n"
    head, rest = doc.split(BEGIN, 1)
    tail = rest.split(END, 1)[1]
    DEVDOC.write_text(f"{head}{BEGIN}\n{text}\n{END}{tail}")
    print(f"recorded in {DEVDOC.relative_to(ROOT)}", flush=True)


def deps(argv: list[str]) -> int:
    record_it = "--record" in argv
    argv = [a for a in argv if a != "--record"]
    chosen = [c for c in CHECKS if c.name in argv] or CHECKS
    pytest_args = [a for a in argv if a not in {c.name for c in CHECKS}]
    uv = ensure_uv()
    workdir = Path(tempfile.mkdtemp(prefix="openprogram-deps-"))
    try:
        outcomes = [run_check(c, uv, workdir, pytest_args) for c in chosen]
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    when = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    text = (
        f"Last run of `python3 scripts/dev.py deps` ({when}, Python "
        f"{sys.version.split()[0]}; {', '.join(f'{c.name}: {c.what}' for c in chosen)}):\n\n"
        + table(outcomes)
    )
    print("\n" + text, flush=True)
    if record_it:
        record(text)
    return max(o.code for o in outcomes)


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in JOBS:
        print(__doc__)
        return 2
    job, rest = argv[0], argv[1:]
    if job == "lock":
        return lock()
    if job == "deps":  # its own virtualenvs; only uv is needed from .venv
        return deps(rest)
    if job == "phoenix":  # its own virtualenv too
        return phoenix(rest)
    ensure_env()
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


PHOENIX = ["arize-phoenix", "arize-phoenix-client"]
"""What ``phoenix`` installs beside the project (newest releases: the lock does not hold them)."""


def phoenix(argv: list[str]) -> int:
    """A real Phoenix, in a throwaway virtualenv, receives a nested run's spans (see the top)."""
    uv = ensure_uv()
    with tempfile.TemporaryDirectory(prefix="openprogram-phoenix-") as tmp:
        where = Path(tmp) / "venv"
        subprocess.run([uv, "venv", "-q", "--python", sys.executable, str(where)], check=True)
        py = where / ("Scripts" if os.name == "nt" else "bin") / "python"
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "UV_CONSTRAINT"))}
        print("installing arize-phoenix and openprogram-loop[otlp,testing] ...", flush=True)
        install = [uv, "pip", "install", "-q", "--python", str(py), f"{ROOT}[otlp,testing]"]
        if subprocess.call([*install, *PHOENIX], cwd=ROOT, env=env) != 0:
            return 1
        check = [str(py), str(ROOT / "scripts" / "phoenix_check.py"), *argv]
        return subprocess.call(check, cwd=ROOT, env=env)


def run_options() -> list[str]:
    """What ``run`` adds to ``openprogram-testing run scenarios/``: the HTML report and the
    loop-behaviour coverage table."""
    return ["--html", str(REPORT), "--coverage"]


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
