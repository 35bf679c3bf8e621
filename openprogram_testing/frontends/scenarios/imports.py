"""Real tools in scenarios: ``import: package.module:attribute``.

A scenario may offer the project's own tools next to stubs.  The import path names an
``@function`` / ``@agentic_function``, a tool object or dict (what ``Runtime.exec(tools=...)``
accepts), a list of them, or a factory marked ``@scenario_factory`` without required parameters
returning one of those.  The top-level ``runtime:`` names a factory ``f(provider)`` (a Python
function, or a callable marked ``@scenario_factory``) returning a configured ``Runtime``.

**Trust**: a scenario with ``import:`` or ``runtime:`` is code, to be trusted like a
``conftest.py``: validating it imports the named modules.  What the harness promises within that
model: it calls nothing that was not made to be called by a scenario (an unmarked callable named
by ``import:``, a builtin such as ``signal.pause``, ``input`` or ``os.abort``, or a class named by
``runtime:`` is reported, never called), and a factory it calls runs with stdin closed (a read
gets end-of-file) and within ``FACTORY_TIME_LIMIT_S``; imports run with stdin closed too.  An
exception, a timeout or ``SystemExit`` becomes a positioned error.

Modules are looked up in the *import roots* first (under pytest: the ``pythonpath`` ini setting
and the rootdir; for the CLI: ``--import-root``; from Python: ``import_roots=``), then on
``sys.path``.  Everything that can go wrong (no such module, the module raises while importing,
no such attribute, an object that is not a tool, a factory that raises) is an ``ImportProblem``
whose message the loader places at the field: never a traceback.
"""

from __future__ import annotations

import difflib
import importlib
import importlib.util
import inspect
import io
import os
import sys
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from openprogram.functions import Function
from openprogram.runtime import Runtime
from openprogram.tools import as_agent_tool

if TYPE_CHECKING:
    from openprogram.runtime import Runtime

FACTORY_TIME_LIMIT_S = 10.0
"""How long a factory named by a scenario may take before validation reports it."""

_MARK = "__openprogram_scenario_factory__"
F = TypeVar("F", bound=Callable[..., Any])


class ImportProblem(ValueError):
    """An import path that does not give what the scenario needs."""


def scenario_factory(fn: F) -> F:
    """Mark ``fn`` as a factory a scenario's ``import:`` may call (it returns a tool or a list
    of tools; ``runtime:`` factories may carry the mark too).  Without it, a callable named by
    ``import:`` is reported as not a tool and never called: calling is a deliberate act."""
    setattr(fn, _MARK, True)
    return fn


def is_factory(obj: Any) -> bool:
    """Whether ``obj`` carries the ``@scenario_factory`` mark."""
    try:
        return getattr(obj, _MARK, False) is True
    except Exception:
        return False


@contextmanager
def _stdin_closed() -> Iterator[None]:
    """``sys.stdin`` at end-of-file: code run while a file is validated cannot wait for input."""
    saved = sys.stdin
    sys.stdin = io.StringIO("")
    try:
        yield
    finally:
        sys.stdin = saved


@contextmanager
def _roots_on_path(roots: Sequence[Path]) -> Iterator[None]:
    added = [str(r) for r in roots if str(r) not in sys.path]
    sys.path[:0] = added
    try:
        yield
    finally:
        for entry in added:
            try:
                sys.path.remove(entry)
            except ValueError:
                pass


def _leaves_its_root(location: str | None, roots: Sequence[Path]) -> str | None:
    """Where ``location`` (a module's file or package folder) really is, when it sits inside
    an import root as found but a link takes it out of that root; else ``None``."""
    if not location:
        return None
    found = os.path.abspath(location)
    for root in roots:
        base = os.path.abspath(root)
        if found.startswith(base.rstrip(os.sep) + os.sep):
            real, real_base = os.path.realpath(found), os.path.realpath(base)
            if not real.startswith(real_base.rstrip(os.sep) + os.sep):
                return real
    return None


def _check_location(module_name: str, location: str | None, roots: Sequence[Path]) -> None:
    real = _leaves_its_root(location, roots)
    if real is not None:
        raise ImportProblem(
            f"module {module_name!r} is found at {location} inside an import root, but a link "
            f"leads it outside (to {real}): the harness never loads a file through a link that "
            "leaves the project"
        )


def resolve(path: str, roots: Sequence[Path] = ()) -> Any:
    """The object ``package.module:attribute`` names."""
    module_name, _, attribute = path.partition(":")
    with _roots_on_path(roots), _stdin_closed():
        try:
            top = module_name.partition(".")[0]
            spec = importlib.util.find_spec(top) if top not in sys.modules else None
        except (Exception, SystemExit):
            spec = None  # reported by the import below
        if spec is not None:  # checked before any of its code runs
            for location in [spec.origin, *(spec.submodule_search_locations or ())]:
                _check_location(top, location, roots)
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            missing = exc.name or ""
            if missing and (module_name == missing or module_name.startswith(missing + ".")):
                where = ", ".join(str(r) for r in roots) or "sys.path"
                raise ImportProblem(
                    f"cannot import {path!r}: no module named {missing!r} (import roots: {where})"
                ) from None
            raise ImportProblem(f"importing {module_name!r} failed: {_describe(exc)}") from None
        except (Exception, SystemExit) as exc:
            raise ImportProblem(f"importing {module_name!r} raised {_describe(exc)}") from None
    _check_location(module_name, getattr(module, "__file__", None), roots)
    target: Any = module
    walked = module_name
    for part in attribute.split("."):
        if not hasattr(target, part):
            names = [n for n in dir(target) if not n.startswith("_")]
            close = difflib.get_close_matches(part, names, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ImportProblem(f"{walked!r} has no attribute {part!r}{hint}")
        try:
            target = getattr(target, part)
        except Exception as exc:
            raise ImportProblem(f"reading {walked}.{part} raised {_describe(exc)}") from None
        walked = f"{walked}.{part}"
    return target


def _describe(exc: BaseException) -> str:
    try:
        text = str(exc)
    except Exception:
        text = "<unprintable>"
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def is_tool(obj: Any) -> bool:
    """Would ``Runtime.exec(tools=[obj])`` accept ``obj`` as one tool?"""
    if callable(getattr(obj, "to_agent_tool", None)):
        return True
    if isinstance(obj, Mapping):
        return "spec" in obj and "execute" in obj
    return hasattr(obj, "spec") and hasattr(obj, "execute")


def load_tools(path: str, roots: Sequence[Path] = ()) -> list[Any]:
    """The tools an ``import:`` entry names, each checked the way the loop will use it."""

    obj = resolve(path, roots)
    if not is_tool(obj) and not isinstance(obj, (list, tuple)) and is_factory(obj):
        obj = _call_factory(path, obj)
    items = list(obj) if isinstance(obj, (list, tuple)) else [obj]
    if not isinstance(obj, (list, tuple)) and not is_tool(obj):
        raise ImportProblem(f"{path!r} is {_kind(obj)}, not a tool; {_TOOL_FORMS}{_unmarked(obj)}")
    for i, item in enumerate(items):
        if not is_tool(item):
            raise ImportProblem(f"{path!r}[{i}] is {_kind(item)}, not a tool; {_TOOL_FORMS}")
        try:
            as_agent_tool(item)
        except (TypeError, ValueError) as exc:
            raise ImportProblem(f"{path!r} is not a usable tool: {exc}") from None
    return items


_TOOL_FORMS = (
    "expected an @function/@agentic_function, a dict with 'spec' and 'execute', an object with "
    ".spec and .execute, a list of those, or a @scenario_factory returning one (a scenario calls "
    "nothing else)"
)


def _unmarked(obj: Any) -> str:
    """What to change when ``obj`` is a function 0.1 would have called as a factory."""
    if not inspect.isfunction(obj):
        return ""
    return (
        "; 0.1 called an unmarked function here, 0.2.0 calls only a marked one: if it builds "
        "the tools, decorate it with @scenario_factory (from openprogram_testing)"
    )


def _kind(obj: Any) -> str:
    if inspect.ismodule(obj):
        return f"the module {obj.__name__!r}"
    if inspect.isclass(obj):
        return f"the class {obj.__name__!r}"
    return f"a {type(obj).__name__}"


def _call_factory(path: str, factory: Any, *args: Any) -> Any:
    try:
        signature = inspect.signature(factory)
    except (TypeError, ValueError):
        signature = None
    if signature is not None:
        try:
            signature.bind(*args)
        except TypeError:
            needed = "one parameter (the provider)" if args else "no required parameters"
            raise ImportProblem(
                f"{path!r} is a callable that is not a tool and not a factory with {needed} "
                f"(signature {signature}); decorate a tool function with @function"
            ) from None
    result = _guarded(path, factory, *args)
    if inspect.isawaitable(result):
        close = getattr(result, "close", None)
        if callable(close):
            close()
        raise ImportProblem(f"the factory {path!r} is async; it must return its value directly")
    return result


def _guarded(path: str, factory: Any, *args: Any) -> Any:
    """``factory(*args)`` with stdin closed, on a daemon thread given ``FACTORY_TIME_LIMIT_S``
    (a factory that never returns is reported and abandoned, as a timed-out tool is)."""
    outcome: list[Any] = []

    def call() -> None:
        try:
            outcome.append((True, factory(*args)))
        except BaseException as exc:  # every way out becomes a message
            outcome.append((False, exc))

    with _stdin_closed():
        worker = threading.Thread(target=call, name=f"scenario factory {path}", daemon=True)
        worker.start()
        worker.join(FACTORY_TIME_LIMIT_S)
    if not outcome:
        raise ImportProblem(
            f"the factory {path!r} did not return within {FACTORY_TIME_LIMIT_S:g} s"
        )
    ok, value = outcome[0]
    if not ok:
        raise ImportProblem(f"calling the factory {path!r} raised {_describe(value)}")
    return value


def _callable_as_runtime_factory(obj: Any) -> bool:
    """What ``runtime:`` may call: a Python function (or method), or a marked callable; not a
    builtin (``signal.pause``, ``os.abort``), a class or another callable object."""
    return is_factory(obj) or inspect.isfunction(obj) or inspect.ismethod(obj)


def load_runtime(path: str, provider: Any, roots: Sequence[Path] = ()) -> Runtime:
    """The ``Runtime`` the factory ``path`` builds for ``provider``."""

    factory = resolve(path, roots)
    if isinstance(factory, Runtime):
        raise ImportProblem(
            f"{path!r} is a Runtime instance; name a factory f(provider) that returns one, so "
            "the scenario's model script reaches it"
        )
    if not callable(factory) or not _callable_as_runtime_factory(factory):
        raise ImportProblem(
            f"{path!r} is {_kind(factory)}, not a factory f(provider) -> Runtime (a Python "
            "function or a @scenario_factory; nothing else is called)"
        )
    runtime = _call_factory(path, factory, provider)
    if not isinstance(runtime, Runtime):
        raise ImportProblem(
            f"the factory {path!r} returned {_kind(runtime)}, not an openprogram Runtime"
        )
    return runtime


def with_runtime(tool: Any, runtime: Any) -> Any:
    """``tool`` as the loop sees it; an agentic function gets ``runtime`` for its nested runs
    (outside ``Runtime.exec`` nothing else would give it one)."""
    from dataclasses import replace

    if not isinstance(tool, Function) or not tool.wants_runtime or runtime is None:
        return tool
    agent_tool = tool.to_agent_tool()
    fn = tool.fn

    def execute(arguments: dict[str, Any], **extras: Any) -> Any:
        return fn(**arguments, **extras, runtime=runtime)

    return replace(agent_tool, execute=execute)


__all__ = [
    "FACTORY_TIME_LIMIT_S",
    "ImportProblem",
    "is_factory",
    "is_tool",
    "load_runtime",
    "load_tools",
    "resolve",
    "scenario_factory",
    "with_runtime",
]
