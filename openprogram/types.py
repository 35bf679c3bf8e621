"""The data model: content blocks, the three messages, stop reasons and usage.

Every type is a slotted dataclass with pydantic's model API (``openprogram._model``):
``model_validate``/``model_validate_json`` validate through pydantic and ``model_dump``/
``model_dump_json`` serialise, so every type round-trips through JSON.  Constructors do not
validate: the loop builds several messages per round and pydantic construction was most of the
per-round cost.  Content blocks and messages are deliberately *not* frozen: a provider
streams into one ``AssistantMessage`` in place (appending blocks, growing text), exactly as pi's
faux provider does, so each delta costs O(1) and the loop never copies a message or the history.
Treat a message as immutable once its ``message_end`` event has been emitted.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal, NoReturn, TypeAlias

from ._model import Model, type_adapter

if TYPE_CHECKING:
    from typing import Self

StopReason: TypeAlias = Literal["stop", "length", "toolUse", "error", "aborted"]
"""Why an assistant message ended. ``error``/``aborted`` end the run; ``toolUse`` asks for tools."""

Termination: TypeAlias = Literal["completed", "max_iterations", "error", "aborted"]
"""Why a whole loop run ended; carried by ``agent_end``."""

FailedTermination: TypeAlias = Literal["error", "aborted"]
"""How a failed run ends; also the stop reason of the failed message that closes its round."""


def failure_termination(failure: BaseException) -> FailedTermination:
    """The termination mapping, decided here once: an ``Exception`` (a provider, a steering
    source or the loop itself failing) ends a run ``error``; any other ``BaseException``
    (cancellation, ``KeyboardInterrupt``, ``SystemExit``) ends it ``aborted``.  A round closed
    by a failed message ends the run with that message's stop reason, the same two words."""
    return "error" if isinstance(failure, Exception) else "aborted"


@dataclass(slots=True)
class TextContent(Model):
    type: Literal["text"] = field(default="text", kw_only=True)
    text: str


@dataclass(slots=True)
class ThinkingContent(Model):
    type: Literal["thinking"] = field(default="thinking", kw_only=True)
    thinking: str
    signature: str | None = None
    redacted: bool = False


@dataclass(slots=True)
class ImageContent(Model):
    type: Literal["image"] = field(default="image", kw_only=True)
    data_b64: str
    mime_type: str


@dataclass(slots=True)
class ToolCall(Model):
    """A function the model picked.

    ``raw_arguments`` is set only when the model's argument JSON did not parse; ``arguments`` is
    then ``{}`` and the loop answers the call with an invalid-arguments result instead of running
    it.  ``signature`` is an opaque token some providers attach to a call and require back with
    it in the next request (Gemini's ``thoughtSignature``, kept as the base64 text it arrived as).
    """

    type: Literal["toolCall"] = field(default="toolCall", kw_only=True)
    id: str
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    raw_arguments: str | None = None
    signature: str | None = None


AssistantContent: TypeAlias = TextContent | ThinkingContent | ToolCall
UserContent: TypeAlias = TextContent | ImageContent


@dataclass(slots=True)
class Usage(Model):
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0


@dataclass(slots=True)
class UserMessage(Model):
    role: Literal["user"] = field(default="user", kw_only=True)
    content: str | list[UserContent]

    @property
    def text(self) -> str:
        if isinstance(self.content, str):
            return self.content
        return "".join(b.text for b in self.content if isinstance(b, TextContent))


def user_messages(value: object, what: str) -> list[UserMessage]:
    """``value`` (a ``str``, a ``UserMessage`` or a sequence of them) as user messages, a
    ``str`` becoming a ``UserMessage`` with that text: prompts, steering, follow-ups and
    scheduled messages all take these forms, and are converted here alone.  ``what`` names an
    item in the ``TypeError`` for anything else (``"a prompt must be a str or UserMessage, got
    int"``); the objects given are the objects returned."""
    if isinstance(value, UserMessage):
        return [value]
    if isinstance(value, str):
        return [UserMessage(content=value)]
    if isinstance(value, bytes | bytearray) or not isinstance(value, Sequence):
        raise TypeError(
            f"{what} must be a str or UserMessage, got {type(value).__name__} "
            "(a list of them is accepted too)"
        )
    out: list[UserMessage] = []
    for item in value:
        if isinstance(item, UserMessage):
            out.append(item)
        elif isinstance(item, str):
            out.append(UserMessage(content=item))
        else:
            raise TypeError(f"{what} must be a str or UserMessage, got {type(item).__name__}")
    return out


@dataclass(slots=True)
class AssistantMessage(Model):
    role: Literal["assistant"] = field(default="assistant", kw_only=True)
    content: list[AssistantContent] = field(default_factory=list)
    stop_reason: StopReason = "stop"
    usage: Usage = field(default_factory=Usage)
    model: str = ""
    provider: str = ""
    api: str = ""
    error_message: str | None = None
    error_status: int | None = None
    error_retryable: bool | None = None
    error_retry_after_s: float | None = None

    @property
    def text(self) -> str:
        """The text blocks joined: what ``Runtime.exec`` returns for the final message."""
        return "".join(b.text for b in self.content if isinstance(b, TextContent))

    @property
    def tool_calls(self) -> list[ToolCall]:
        return [b for b in self.content if isinstance(b, ToolCall)]


@dataclass(slots=True)
class ToolResultMessage(Model):
    role: Literal["toolResult"] = field(default="toolResult", kw_only=True)
    tool_call_id: str
    tool_name: str
    content: list[UserContent] = field(default_factory=list)
    is_error: bool = False
    details: Any = None
    skipped: bool = False

    @property
    def text(self) -> str:
        return "".join(b.text for b in self.content if isinstance(b, TextContent))


Message: TypeAlias = UserMessage | AssistantMessage | ToolResultMessage


def _no_parameters() -> dict[str, Any]:
    return {"type": "object", "properties": {}}


_set_item = dict.__setitem__
_SPEC_KEYS = frozenset(("name", "description", "parameters"))


class ToolSpec(dict[str, Any], Model):
    """What the model is told about a tool: the wire-neutral definition every adapter maps.

    A ``dict`` with exactly the keys ``name``, ``description`` and ``parameters`` — so
    ``json.dumps(spec)`` writes the definition as any JSON tool list spells it — that also keeps
    them as slots: the loop reads ``spec.name`` for every offered tool on every run, and a slot is
    read as fast as a dataclass field (a property over the items costs four times as much).
    Setting an attribute or one of the three items updates both; any other change to the mapping
    is refused, so the two can never disagree.  Equal to a plain dict with the same three items.
    """

    __slots__ = ("description", "name", "parameters")
    name: str
    description: str
    parameters: dict[str, Any]

    def __init__(
        self, name: str, description: str = "", parameters: dict[str, Any] | None = None
    ) -> None:
        if parameters is None:
            parameters = _no_parameters()
        dict.__init__(self, name=name, description=description, parameters=parameters)
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "description", description)
        object.__setattr__(self, "parameters", parameters)

    def __setattr__(self, key: str, value: Any) -> None:
        object.__setattr__(self, key, value)  # an unknown name is an AttributeError here
        _set_item(self, key, value)

    def __setitem__(self, key: str, value: Any) -> None:
        if key not in _SPEC_KEYS:
            raise KeyError(f"a ToolSpec has only name, description and parameters, not {key!r}")
        self.__setattr__(key, value)

    def _fixed(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise TypeError(
            "a ToolSpec always has exactly name, description and parameters: set them one by one"
        )

    __delitem__ = update = pop = popitem = clear = setdefault = __ior__ = _fixed

    def __repr__(self) -> str:
        return (
            f"ToolSpec(name={self.name!r}, description={self.description!r}, "
            f"parameters={self.parameters!r})"
        )

    def __reduce__(self) -> tuple[Any, ...]:
        # copy, deepcopy and pickle rebuild through __init__ (the default would set items).
        return (type(self), (self.name, self.description, self.parameters))

    def model_copy(self, *, update: dict[str, Any] | None = None, deep: bool = False) -> Self:
        base = copy.deepcopy(self) if deep else self
        fields: dict[str, Any] = {
            "name": base.name,
            "description": base.description,
            "parameters": base.parameters,
        }
        return type(self)(**{**fields, **(update or {})})

    def model_dump(
        self,
        *,
        mode: Literal["python", "json"] = "python",
        include: Any = None,
        exclude: Any = None,
        exclude_defaults: bool = False,
        exclude_none: bool = False,
    ) -> dict[str, Any]:
        out: dict[str, Any] = type_adapter(_spec_fields()).dump_python(
            _spec_fields()(self.name, self.description, self.parameters),
            mode=mode,
            include=include,
            exclude=exclude,
            exclude_defaults=exclude_defaults,
            exclude_none=exclude_none,
        )
        return out

    def model_dump_json(
        self,
        *,
        indent: int | None = None,
        include: Any = None,
        exclude: Any = None,
        exclude_defaults: bool = False,
        exclude_none: bool = False,
    ) -> str:
        return (
            type_adapter(_spec_fields())
            .dump_json(
                _spec_fields()(self.name, self.description, self.parameters),
                indent=indent,
                include=include,
                exclude=exclude,
                exclude_defaults=exclude_defaults,
                exclude_none=exclude_none,
            )
            .decode()
        )

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: Any) -> Any:
        """Validated and serialised as the dataclass of its three fields (unknown keys refused,
        ``name`` required), then built as a ``ToolSpec``."""
        from pydantic_core import core_schema

        fields = handler.generate_schema(_spec_fields())

        def from_fields(value: Any) -> ToolSpec:
            return cls(value.name, value.description, value.parameters)

        def to_fields(spec: ToolSpec) -> Any:
            return _spec_fields()(spec.name, spec.description, spec.parameters)

        return core_schema.no_info_after_validator_function(
            from_fields,
            fields,
            serialization=core_schema.plain_serializer_function_ser_schema(
                to_fields, return_schema=fields
            ),
        )


@functools.cache
def _spec_fields() -> type[Any]:
    """The three fields of a ``ToolSpec`` as a dataclass, the shape pydantic validates, dumps and
    describes (named ``ToolSpec`` so its errors and schema title say so); built on first use."""

    @dataclass(slots=True)
    class ToolSpec:
        __pydantic_config__: ClassVar[dict[str, Any]] = {"extra": "forbid"}
        name: str
        description: str = ""
        parameters: dict[str, Any] = field(default_factory=_no_parameters)

    return ToolSpec


__all__ = [
    "AssistantContent",
    "AssistantMessage",
    "FailedTermination",
    "ImageContent",
    "Message",
    "StopReason",
    "Termination",
    "TextContent",
    "ThinkingContent",
    "ToolCall",
    "ToolResultMessage",
    "ToolSpec",
    "Usage",
    "UserContent",
    "UserMessage",
    "failure_termination",
    "user_messages",
]
