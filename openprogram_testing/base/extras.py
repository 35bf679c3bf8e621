"""What the ``testing`` extra brings, and the one install line to print when it is missing.

The runtime (``pip install openprogram-loop``) and the pytest plugin work without the extra; the
parts of the harness built on PyYAML, vcrpy, syrupy, hypothesis, rich or httpx need it.  A part
that finds its dependency missing fails with ``MissingExtra``, whose message is the exact command
to run, instead of a bare ``ModuleNotFoundError`` from deep inside an import.
"""

from __future__ import annotations

import importlib.util

INSTALL_LINE = 'pip install "openprogram-loop[testing]"'
"""The command that installs the harness's optional dependencies."""

TESTING_MODULES: dict[str, str] = {
    "yaml": "PyYAML",
    "vcr": "vcrpy",
    "syrupy": "syrupy",
    "hypothesis": "hypothesis",
    "rich": "rich",
    "httpx": "httpx",
}
"""Import name -> distribution name of every dependency the ``testing`` extra brings."""


class MissingExtra(ImportError):
    """A harness feature needs a dependency of the ``testing`` extra that is not installed."""


def missing(*modules: str) -> list[str]:
    """The distributions (``PyYAML``, ``vcrpy``…) of ``modules`` that are not importable."""
    return [TESTING_MODULES.get(m, m) for m in modules if importlib.util.find_spec(m) is None]


def require(feature: str, *modules: str) -> None:
    """Raise ``MissingExtra`` naming ``feature``, what is missing and ``INSTALL_LINE`` unless
    every module in ``modules`` is importable."""
    absent = missing(*modules)
    if absent:
        raise MissingExtra(
            f"{feature} needs the testing extra ({', '.join(absent)} not installed); "
            f"install it with: {INSTALL_LINE}"
        )


__all__ = ["INSTALL_LINE", "TESTING_MODULES", "MissingExtra", "missing", "require"]
