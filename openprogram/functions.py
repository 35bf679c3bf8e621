"""``Function``: a Python function as a tool (the decorators that make one are in ``registry``).

The decorators wrap a function in a ``Function``: still callable exactly as before (same
signature, same result, sync or async), registered in one shared registry, and carrying the
``ToolSpec`` the model is shown:

- ``name``: ``name=`` or ``__name__``;
- ``description``: ``description=`` or the docstring's first paragraph (lines joined by spaces);
- ``parameters``: ``parameters=`` (a JSON Schema, validated with ``jsonschema``) or a schema
  generated with pydantic from the signature (``Optional``, unions, ``Literal`` enums, lists,
  nested pydantic models, defaults), with parameter descriptions from the docstring's ``Args:``
  section.  Injected parameters (``runtime``, ``on_update``, ``cancel``, ``tool_call_id``) are
  hidden from the model.

The pydantic model and the ``AgentTool`` are built once per function (on first use) and reused:
the per-call path is one pydantic validation and one Python call.
"""

from __future__ import annotations

import inspect
import threading
import typing
from collections.abc import Callable, Iterable, Mapping
from contextvars import ContextVar
from functools import cache
from typing import TYPE_CHECKING, Any

from .approvals import check_requirement
from .tools import AgentTool, ValidationProblem, is_async_callable, json_schema_validator
from .types import ToolSpec

if TYPE_CHECKING:
    from pydantic import BaseModel

INJECTED_PARAMETERS = frozenset({"runtime", "on_update", "cancel", "tool_call_id"})
"""Parameters the framework supplies; never shown to (or accepted from) the model."""

_LOOP_EXTRAS = ("tool_call_id", "cancel", "on_update")

gating_epoch = [0]
"""Bumped whenever a ``Function``'s ``exposed`` or ``defer`` changes after decoration: the
registries' menu caches are keyed by it (and by their own generation), so a change is seen by
the next run without every run re-reading every function."""

current_runtime: ContextVar[Any] = ContextVar("openprogramcurrent_runtime", default=None)
"""The ``Runtime`` whose ``exec`` is running the current tool (set by ``openprogram.runtime``);
read when an ``@agentic_function`` that declares ``runtime`` is executed as a tool."""


@cache
def _no_titles() -> type[Any]:
    """Pydantic's schema generator without the auto-generated per-field ``title`` noise.

    Pydantic is imported here, when the first tool schema is built, not at ``import
    openprogram`` (its import alone would exceed the import-time budget)."""
    from pydantic.json_schema import GenerateJsonSchema

    class NoTitles(GenerateJsonSchema):
        def field_title_should_be_set(self, schema: Any) -> bool:
            return False

    return NoTitles


class Function:
    """A decorated function: a plain callable plus a tool spec and registry metadata.

    Attributes: ``fn`` (the original function), ``name``, ``spec`` (``ToolSpec``), ``exposed``
    (offered by registry menus at all: ``False`` keeps it out of every toolset, though a caller
    may still pass it in ``exec(tools=[...])``), ``unsafe_for`` (sources/channels it must not be
    offered to), ``toolsets`` (named toolsets it joined), ``requires_approval`` (``True`` or a
    check of the call's arguments: the run's approval gate decides each call,
    ``openprogram.approvals``), ``agentic`` (made by ``@agentic_function``), and the gating
    options of ``openprogram.gating``: ``check_fn``, ``requires_env``, ``can_use`` (is it
    runnable here; checked when a run asks for ``only_available``), ``defer`` (its schema stays
    out of the provider's tool array until ``tool_search`` loads it) and ``search_hint`` (a
    phrase ``tool_search`` scores).
    """

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        parameters: Mapping[str, Any] | None = None,
        exposed: bool = True,
        unsafe_for: Iterable[str] = (),
        toolsets: Iterable[str] = (),
        requires_approval: bool | Callable[..., Any] = False,
        check_fn: Callable[[], Any] | None = None,
        requires_env: Iterable[str] = (),
        can_use: Callable[[], Any] | None = None,
        defer: bool = False,
        search_hint: str | None = None,
        agentic: bool = False,
    ) -> None:
        if not callable(fn):
            raise TypeError(f"@function needs a callable, got {fn!r}")
        if isinstance(unsafe_for, str) or isinstance(toolsets, str):
            raise TypeError("unsafe_for= and toolsets= take a tuple of names, not a single string")
        if isinstance(requires_env, str):
            raise TypeError("requires_env= takes a tuple of variable names, not a single string")
        for option, check in (("check_fn", check_fn), ("can_use", can_use)):
            if check is not None and not callable(check):
                raise TypeError(f"{option}= must be a callable taking no arguments, got {check!r}")
        if search_hint is not None and not isinstance(search_hint, str):
            raise TypeError(f"search_hint= must be a string, got {search_hint!r}")
        self.fn = fn
        derived = name if name is not None else getattr(fn, "__name__", None)
        if not isinstance(derived, str) or not derived:
            raise TypeError(f"cannot derive a tool name for {fn!r}: pass name=")
        self.name: str = derived
        self._exposed = bool(exposed)
        self.unsafe_for = frozenset(unsafe_for)
        self.toolsets = tuple(toolsets)
        self.requires_approval = check_requirement(requires_approval, self.name)
        self.check_fn = check_fn
        self.requires_env = tuple(requires_env)
        bad_env = [v for v in self.requires_env if not isinstance(v, str) or not v]
        if bad_env:
            raise TypeError(f"requires_env= must list variable names, got {bad_env[0]!r}")
        self.can_use = can_use
        self._defer = bool(defer)
        self.search_hint = search_hint
        self.agentic = agentic
        self.is_async = is_async_callable(fn)
        self._lock = threading.Lock()
        self._agent_tool: AgentTool | None = None

        signature = inspect.signature(fn)
        self.signature = signature
        params = signature.parameters
        self.wants_runtime = "runtime" in params
        self._runtime_required = (
            self.wants_runtime and params["runtime"].default is inspect.Parameter.empty
        )
        var_kw = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
        self.loop_extras = frozenset(
            _LOOP_EXTRAS if var_kw else (n for n in _LOOP_EXTRAS if n in params)
        )
        summary, arg_docs = parse_docstring(inspect.getdoc(fn))
        self.description = description if description is not None else summary

        self._model: type[BaseModel] | None = None
        if parameters is not None:
            if not isinstance(parameters, Mapping):
                raise TypeError(f"parameters= of {self.name!r} must be a JSON Schema mapping")
            self.parameters = dict(parameters)
            self._validate = json_schema_validator(self.parameters)  # also checks the schema
        else:
            self._model, typed_fields = _signature_model(
                fn, self.name, signature, arg_docs, allow_extra=var_kw
            )
            self.parameters = _model_schema(self._model)
            self._validate = _pydantic_validator(self.name, typed_fields, allow_extra=var_kw)
        self.spec = ToolSpec(
            name=self.name, description=self.description, parameters=self.parameters
        )
        for attr in ("__module__", "__name__", "__qualname__", "__doc__"):
            try:
                setattr(self, attr, getattr(fn, attr))
            except AttributeError:
                pass
        self.__wrapped__ = fn

    # -- plain Python ------------------------------------------------------------------------
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)

    @property
    def __signature__(self) -> inspect.Signature:
        return self.signature

    def __repr__(self) -> str:
        kind = "agentic_function" if self.agentic else "function"
        return f"<{kind} {self.name}>"

    def validate(self, arguments: dict[str, Any]) -> tuple[dict[str, Any], list[ValidationProblem]]:
        """Validate (and, for signature-derived tools, coerce) model-supplied arguments."""
        return self._validate(arguments)

    # -- as a tool ---------------------------------------------------------------------------
    def to_agent_tool(self) -> AgentTool:
        """The ``AgentTool`` for the loop, built once and cached."""
        tool = self._agent_tool
        if tool is not None:
            return tool
        with self._lock:
            if self._agent_tool is None:
                self._agent_tool = AgentTool(
                    spec=self.spec,
                    execute=self._make_execute(),
                    validate=self._validate,
                    is_async=self.is_async,
                    accepts=self.loop_extras,
                    source=self,
                    meta=self._meta(),
                )
            return self._agent_tool

    @property
    def exposed(self) -> bool:
        """Offered by registry menus (gating layer 2).  Setting it takes effect at the next
        run that resolves a menu (registries cache their menus per ``gating_epoch``)."""
        return self._exposed

    @exposed.setter
    def exposed(self, value: bool) -> None:
        with self._lock:
            self._exposed = bool(value)
            if self._agent_tool is not None:
                self._agent_tool.meta["exposed"] = self._exposed
            gating_epoch[0] += 1

    @property
    def defer(self) -> bool:
        """Schema held back until ``tool_search`` loads it (gating layer 6); settable, like
        ``exposed``."""
        return self._defer

    @defer.setter
    def defer(self, value: bool) -> None:
        self.set_defer(value)

    def set_defer(self, defer: bool) -> None:
        """Mark the tool deferred (or not) after decoration: the next run that resolves it
        reads the new flag (``Registry.apply_default_deferral`` uses this)."""
        with self._lock:
            self._defer = bool(defer)
            if self._agent_tool is not None:
                self._agent_tool.meta["defer"] = self._defer
            gating_epoch[0] += 1

    def _meta(self) -> dict[str, Any]:
        """What the gating layers read off the tool (``openprogram.gating``): only the options
        set, so a plain tool's ``meta`` stays as small as before."""
        meta: dict[str, Any] = {
            "unsafe_for": self.unsafe_for,
            "exposed": self.exposed,
            "requires_approval": self.requires_approval,
            "defer": self.defer,
        }
        if self.check_fn is not None or self.requires_env or self.can_use is not None:
            meta["check_fn"] = self.check_fn
            meta["requires_env"] = self.requires_env
            meta["can_use"] = self.can_use
        # the three together, read by ``gating.is_available`` in one lookup
        meta["available"] = (self.check_fn, self.requires_env, self.can_use)
        if self.search_hint is not None:
            meta["search_hint"] = self.search_hint
        return meta

    def _make_execute(self) -> Callable[..., Any]:
        fn = self.fn
        if not self.wants_runtime:
            if not self.loop_extras:
                return lambda arguments: fn(**arguments)
            return lambda arguments, **extras: fn(**arguments, **extras)
        name, required = self.name, self._runtime_required

        def execute(arguments: dict[str, Any], **extras: Any) -> Any:
            runtime = current_runtime.get()
            if runtime is None:
                if required:
                    raise RuntimeError(
                        f"{name} needs a runtime: run it through Runtime.exec "
                        "(or call it directly with runtime=...)"
                    )
                return fn(**arguments, **extras)
            return fn(**arguments, **extras, runtime=runtime)

        return execute

    def call_injected(self, runtime: Any) -> Any:
        """Call with no model arguments, only what the framework injects (``choices=``)."""
        if self.wants_runtime:
            return self.fn(runtime=runtime)
        return self.fn()

    def required_parameters(self) -> list[str]:
        """Names the model must supply (not injected, no default)."""
        return [
            p.name
            for p in self.signature.parameters.values()
            if p.name not in INJECTED_PARAMETERS
            and p.default is inspect.Parameter.empty
            and p.kind not in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
        ]


# -- docstrings ----------------------------------------------------------------------------------


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """``(first paragraph, {parameter: description})``; whitespace inside each is collapsed.

    Parameter descriptions come from a Google ``Args:`` section (NumPy and reST styles work too,
    via ``docstring_parser``).
    """
    if not doc:
        return "", {}
    import docstring_parser

    summary_lines: list[str] = []
    for line in doc.strip().splitlines():
        stripped = line.strip()
        if not stripped or (stripped.endswith(":") and stripped[:-1].lower() in _SECTIONS):
            break
        summary_lines.append(stripped)
    starts_with_section = not summary_lines
    # docstring_parser reads a leading section header as the summary: give it a placeholder.
    parsed = docstring_parser.parse("_\n\n" + doc if starts_with_section else doc)
    args = {
        p.arg_name: " ".join(p.description.split())
        for p in parsed.params
        if p.args
        and p.args[0] in ("param", "parameter", "arg", "argument", "key", "keyword")
        and p.description
    }
    return " ".join(summary_lines), args


_SECTIONS = frozenset(
    {
        "args",
        "arguments",
        "parameters",
        "params",
        "returns",
        "return",
        "raises",
        "yields",
        "example",
        "examples",
        "attributes",
        "note",
        "notes",
    }
)


# -- signature → pydantic model → JSON Schema -----------------------------------------------------


def _signature_model(
    fn: Callable[..., Any],
    name: str,
    signature: inspect.Signature,
    arg_docs: dict[str, str],
    *,
    allow_extra: bool,
) -> tuple[type[BaseModel], dict[str, tuple[Any, bool]]]:
    """The schema model (``Field`` defaults and descriptions, for the JSON Schema) and, per
    model-visible parameter, ``(annotation, required)`` for the validator."""
    from pydantic import ConfigDict, Field, create_model

    try:
        hints = typing.get_type_hints(fn, include_extras=True)
    except NameError as exc:
        raise TypeError(
            f"cannot build the tool schema of {name!r}: annotation {exc.name!r} is not defined "
            "at module level (define it globally or pass parameters=)"
        ) from None
    except Exception:
        hints = {}
    fields: dict[str, Any] = {}
    typed_fields: dict[str, tuple[Any, bool]] = {}
    for index, param in enumerate(signature.parameters.values()):
        if param.name in INJECTED_PARAMETERS:
            continue
        if param.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
            continue
        if param.kind is inspect.Parameter.POSITIONAL_ONLY:
            raise TypeError(
                f"tool {name!r}: positional-only parameter {param.name!r} cannot be passed by name"
            )
        annotation = hints.get(param.name, param.annotation)
        if annotation is inspect.Parameter.empty:
            annotation = Any
        default = ... if param.default is inspect.Parameter.empty else param.default
        field_kwargs: dict[str, Any] = {}
        if param.name in arg_docs:
            field_kwargs["description"] = arg_docs[param.name]
        field_name = param.name
        if _clashes(param.name):
            field_name = f"param_{index}"
            field_kwargs["alias"] = param.name
        fields[field_name] = (annotation, Field(default, **field_kwargs))
        typed_fields[param.name] = (annotation, default is ...)
    config = ConfigDict(
        extra="allow" if allow_extra else "forbid",
        arbitrary_types_allowed=False,
        protected_namespaces=(),
    )
    try:
        model = create_model(_model_name(name), __config__=config, **fields)
    except Exception as exc:
        raise TypeError(f"cannot build the tool schema of {name!r}: {exc}") from None
    return model, typed_fields


def _clashes(param: str) -> bool:
    from pydantic import BaseModel

    return param.startswith("_") or param.startswith("model_") or hasattr(BaseModel, param)


def _model_name(name: str) -> str:
    cleaned = "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in name)
    return cleaned or "arguments"


def _model_schema(model: type[BaseModel]) -> dict[str, Any]:
    try:
        schema = model.model_json_schema(schema_generator=_no_titles())
    except Exception as exc:
        raise TypeError(
            f"cannot generate a JSON Schema for tool {model.__name__!r}: {exc}"
        ) from None
    schema.pop("title", None)
    schema.setdefault("properties", {})
    return schema


def _pydantic_validator(
    name: str, typed_fields: dict[str, tuple[Any, bool]], *, allow_extra: bool
) -> Callable[[dict[str, Any]], tuple[dict[str, Any], list[ValidationProblem]]]:
    """Validate + coerce through a compiled pydantic validator, built once per function.

    It validates into a ``TypedDict`` (not the schema model): the result is already the kwargs
    dict, arguments the model left out stay out (so the function's own defaults apply), and no
    model instance is built per call.
    """
    from typing import NotRequired

    from pydantic import ConfigDict, TypeAdapter, ValidationError
    from typing_extensions import TypedDict

    annotations = {
        param: (annotation if required else NotRequired[annotation])
        for param, (annotation, required) in typed_fields.items()
    }
    make_typed_dict: Any = TypedDict  # the functional form, with a computed name
    arguments_type: Any = make_typed_dict(_model_name(name) + "_arguments", annotations)
    arguments_type.__pydantic_config__ = ConfigDict(extra="allow" if allow_extra else "forbid")
    validate_python = TypeAdapter(arguments_type).validator.validate_python

    def validate(arguments: dict[str, Any]) -> tuple[dict[str, Any], list[ValidationProblem]]:
        try:
            return validate_python(arguments), []
        except ValidationError as exc:
            return arguments, [
                (".".join(str(part) for part in err["loc"]) or "root", err["msg"])
                for err in exc.errors(include_url=False, include_context=False)
            ]

    return validate


__all__ = [
    "INJECTED_PARAMETERS",
    "Function",
    "parse_docstring",
]
