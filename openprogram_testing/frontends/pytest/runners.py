"""The objects behind the ``loop_runner`` and ``exec_runner`` fixtures.

Both run something for a test, keep what ran (so a failing test shows its timeline once), check
the loop invariants on every run, and fail the test at once (not at teardown) when the scripted
provider was asked for more turns than its script has: the failure names the model call, the
number of scripted turns and the last message the model was sent.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from openprogram import Runtime
from openprogram_testing.core.trace import LoopTrace, run_loop, run_loop_sync
from openprogram_testing.core.tree import Subject, TraceTree, run_exec, run_exec_sync
from openprogram_testing.judges.invariants import check_invariants

if TYPE_CHECKING:
    from openprogram import Runtime

"""One thing a runner ran: a loop run's trace, or the tree of an ``exec``'s runs."""

_R = TypeVar("_R", LoopTrace, TraceTree)


class _Runner(Generic[_R]):
    """What both runners share: options, the record of runs, the checks after a run, and the
    runs of the runner's own kind picked out of the record it shares with the other
    runner."""

    _kind: type[_R]

    def __init__(
        self,
        fixture: Callable[[str], Any],
        wants: Callable[[str], bool],
        check: bool,
        record: list[Subject],
        moves_cache_prefix: str | None = None,
    ) -> None:
        self._fixture = fixture
        self._wants = wants
        self.check = check
        self.ran = record
        self.moves_cache_prefix = moves_cache_prefix
        """The reason the test's runs change the cached prefix (the ``moves_cache_prefix``
        marker): the prompt-cache rule is then not checked."""
        self.schedules: list[Any] = []
        """Schedules passed as ``schedule=`` (judged at the fixture's teardown; the
        ``steering`` fixture judges its own)."""

    def _own_runs(self) -> list[_R]:
        return [r for r in self.ran if isinstance(r, self._kind)]

    @property
    def last(self) -> _R | None:
        """The latest run of this runner's kind (``None`` before the first)."""
        own = self._own_runs()
        return own[-1] if own else None

    def _schedule(self, kwargs: dict[str, Any]) -> None:
        if "schedule" not in kwargs and self._wants("steering"):
            kwargs["schedule"] = self._fixture("steering")
            return
        given = kwargs.get("schedule")
        wanted = self._fixture("steering") if self._wants("steering") else None
        if given is not None and given is not wanted and given not in self.schedules:
            self.schedules.append(given)

    def _finish(self, ran: Subject, provider: Any, check: bool) -> None:
        __tracebackhide__ = True
        self.ran.append(ran)
        raise_unreported = getattr(provider, "raise_new_violations", None)
        if raise_unreported is not None:
            raise_unreported()  # the script ran out: fail here, naming the model call
        if check:
            check_invariants(ran, moves_cache_prefix=self.moves_cache_prefix)


class LoopRunner(_Runner[LoopTrace]):
    """Runs loops for a test and returns their ``LoopTrace`` (the ``loop_runner`` fixture).

    ``loop_runner(prompts, **run_loop_options)`` runs with the test's ``scripted_provider``
    (and the ``steering`` schedule if the test requested it); ``loop_runner(provider, prompts,
    ...)`` or ``provider=`` picks another provider.  ``await loop_runner.arun(...)`` is the async
    form.  Every trace is checked against the loop invariants (``check_invariants=False``, the
    ``op_no_invariants`` marker, ``--openprogram-no-invariants`` or the ini option
    ``openprogram_check_invariants = false`` turn that off) and kept in ``traces``.
    """

    _kind = LoopTrace

    @property
    def traces(self) -> list[LoopTrace]:
        return self._own_runs()

    def _prepare(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, Any, bool]:
        check = kwargs.pop("check_invariants", self.check)
        provider = kwargs.pop("provider", None)
        if len(args) == 2:
            if provider is not None:
                raise TypeError("loop_runner: provider given both positionally and as provider=")
            provider, prompts = args
        elif len(args) == 1:
            (prompts,) = args
        else:
            raise TypeError(
                "use loop_runner(prompts, **options) or loop_runner(provider, prompts, **options)"
            )
        if provider is None:
            provider = self._fixture("scripted_provider")
        self._schedule(kwargs)
        return provider, prompts, bool(check)

    def __call__(self, *args: Any, **kwargs: Any) -> LoopTrace:
        __tracebackhide__ = True
        provider, prompts, check = self._prepare(args, kwargs)
        trace = run_loop_sync(provider, prompts, **kwargs)
        self._finish(trace, provider, check)
        return trace

    async def arun(self, *args: Any, **kwargs: Any) -> LoopTrace:
        __tracebackhide__ = True
        provider, prompts, check = self._prepare(args, kwargs)
        trace = await run_loop(provider, prompts, **kwargs)
        self._finish(trace, provider, check)
        return trace


class ExecRunner(_Runner[TraceTree]):
    """Runs ``Runtime.exec`` for a test and returns the ``TraceTree`` of its runs (the
    ``exec_runner`` fixture).

    ``exec_runner(content, **exec_options)`` runs on ``exec_runner.runtime``: a ``Runtime`` over
    the test's ``scripted_provider`` (model ``"test-model"``), built on first use;
    ``exec_runner(runtime, content, ...)`` uses your own ``Runtime`` (over the emulator, a
    cassette, anything).  ``schedule=`` (default: the test's ``steering`` fixture, if requested)
    steers any run, nested ones by tool path.  ``raises=False`` keeps an exception of ``exec`` in
    ``tree.exception``.  ``await exec_runner.arun(...)`` is the async form.  Every run of the
    tree is checked against the loop invariants (switched off as for ``loop_runner``).
    """

    _kind = TraceTree

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self._runtime: Runtime | None = None

    @property
    def runtime(self) -> Runtime:
        """The default ``Runtime`` (over the test's ``scripted_provider``)."""
        if self._runtime is None:
            self._runtime = Runtime(self._fixture("scripted_provider"), "test-model")
        return self._runtime

    @property
    def trees(self) -> list[TraceTree]:
        return self._own_runs()

    def _prepare(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, Any, bool]:
        check = kwargs.pop("check_invariants", self.check)
        if len(args) == 2:
            runtime, content = args
        elif len(args) == 1:
            runtime, (content,) = self.runtime, args
        else:
            raise TypeError(
                "use exec_runner(content, **options) or exec_runner(runtime, content, **options)"
            )
        if not hasattr(runtime, "aexec"):
            raise TypeError(f"exec_runner runs a Runtime, got {type(runtime).__name__}")
        self._schedule(kwargs)
        return runtime, content, bool(check)

    def __call__(self, *args: Any, **kwargs: Any) -> TraceTree:
        __tracebackhide__ = True
        runtime, content, check = self._prepare(args, kwargs)
        raises = kwargs.pop("raises", True)
        tree = run_exec_sync(runtime, content, raises=False, **kwargs)
        return self._settle(tree, runtime, check, raises)

    async def arun(self, *args: Any, **kwargs: Any) -> TraceTree:
        __tracebackhide__ = True
        runtime, content, check = self._prepare(args, kwargs)
        raises = kwargs.pop("raises", True)
        tree = await run_exec(runtime, content, raises=False, **kwargs)
        return self._settle(tree, runtime, check, raises)

    def _settle(self, tree: TraceTree, runtime: Any, check: bool, raises: bool) -> TraceTree:
        __tracebackhide__ = True
        self._finish(tree, runtime.active_provider, check)
        if raises and tree.exception is not None:
            raise tree.exception
        return tree


__all__ = ["ExecRunner", "LoopRunner"]
