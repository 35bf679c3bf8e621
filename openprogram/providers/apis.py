"""The one table of provider APIs: every fact about each wire API, one entry per API.

Everything that needs to know something about an API reads it here: the lazy adapter imports
(``openprogram.providers``), ``provider_from_env`` (keys and base-URL variables), the harness's
cassette replay (adapter classes, request paths), the recorder (which APIs can be recorded, with
which default model), the emulator (paths it serves).  Adding a provider is one entry here, one
adapter module and one wire module.

An API has one name in the code, its ``WireAPI`` (``"openai_chat"``).  Other spellings users type
(``"openai"``, ``"openai-chat"``, ``"OpenAI_Responses"``) are accepted at the edge by ``api_named``
and mapped by the entries' ``aliases``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # (a type only: ``wire`` imports ``config``, which imports this package)
    from .wire import WireAPI


@dataclass(frozen=True, slots=True)
class ProviderAPI:
    """One wire API and everything the code knows about it."""

    # The API's one name in the code.
    name: WireAPI
    # The adapter: its module under ``openprogram.providers`` and its class.
    module: str
    adapter: str
    # Variables holding the API key (the first is named in errors; none: a credential chain)
    # and the base URL.
    key_vars: tuple[str, ...]
    base_url_var: str
    # The request paths served for it (``{model}``: a path parameter); the first is the path a
    # request of a fixed-path API goes to, or the template of a per-model one.
    paths: tuple[str, ...]
    # The path the adapter appends to its base URL (``None``: per-model paths, the adapter is
    # given the origin).
    endpoint: str | None = None
    # Whether ``openprogram-testing record`` can record against it, and the model it uses when
    # none is given.
    recordable: bool = False
    record_model: str | None = None
    # Other spellings accepted at the edge (normalised: lower case, ``-`` read as ``_``).
    aliases: tuple[str, ...] = ()
    # The provider as the OpenTelemetry GenAI conventions name it (``gen_ai.provider.name`` on
    # the spans of ``openprogram.telemetry``): one of the convention's well-known values.
    otel_provider: str = ""

    @property
    def module_path(self) -> str:
        return f"openprogram.providers.{self.module}"

    @property
    def streaming_path(self) -> str:
        """A concrete path of a streamed request (model ``m`` in a per-model path)."""
        path = self.paths[0]
        if self.endpoint is None:
            path = next((p for p in self.paths if "stream" in p), path)
        return path.split("?", 1)[0].replace("{model}", "m").replace("{modelId}", "m")


PROVIDER_APIS: tuple[ProviderAPI, ...] = (
    ProviderAPI(
        "openai_chat",
        "openai_chat",
        "OpenAIChatProvider",
        ("OPENAI_API_KEY",),
        "OPENAI_BASE_URL",
        ("/v1/chat/completions",),
        endpoint="/chat/completions",
        recordable=True,
        record_model="gpt-4o-mini",
        aliases=("openai",),
        otel_provider="openai",
    ),
    ProviderAPI(
        "openai_responses",
        "openai_responses",
        "OpenAIResponsesProvider",
        ("OPENAI_API_KEY",),
        "OPENAI_BASE_URL",
        ("/v1/responses",),
        endpoint="/responses",
        recordable=True,
        record_model="gpt-4o-mini",
        otel_provider="openai",
    ),
    ProviderAPI(
        "anthropic",
        "anthropic",
        "AnthropicProvider",
        ("ANTHROPIC_API_KEY",),
        "ANTHROPIC_BASE_URL",
        (
            "/v1/messages",
            "/model/{modelId}/invoke",
            "/model/{modelId}/invoke-with-response-stream",
        ),
        endpoint="/v1/messages",
        recordable=True,
        record_model="claude-3-5-haiku-latest",
        aliases=("anthropic_messages",),  # AssistantMessage.api as stored
        otel_provider="anthropic",
    ),
    ProviderAPI(
        "gemini",
        "gemini",
        "GeminiProvider",
        ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
        "GEMINI_BASE_URL",
        (
            "/v1beta/models/{model}:generateContent",
            "/v1beta/models/{model}:streamGenerateContent?alt=sse",
        ),
        recordable=True,
        record_model="gemini-2.0-flash",
        aliases=("google_gemini",),  # AssistantMessage.api as stored
        otel_provider="gcp.gen_ai",
    ),
    ProviderAPI(
        "bedrock",
        "bedrock",
        "BedrockProvider",
        (),
        "BEDROCK_BASE_URL",
        ("/model/{modelId}/converse", "/model/{modelId}/converse-stream"),
        recordable=True,
        record_model="amazon.nova-micro-v1:0",
        aliases=("bedrock_converse",),  # AssistantMessage.api as stored
        otel_provider="aws.bedrock",
    ),
)
"""Every provider API, one entry each."""

APIS: dict[str, ProviderAPI] = {api.name: api for api in PROVIDER_APIS}
"""The entries by their one name."""

_SPELLINGS: dict[str, ProviderAPI] = {
    spelling: api for api in PROVIDER_APIS for spelling in (api.name, *api.aliases)
}


def api_named(spelling: str) -> ProviderAPI | None:
    """The entry a user's spelling names (``"openai"``, ``"openai-chat"``, ``"Gemini"``...), or
    ``None``."""
    return _SPELLINGS.get(spelling.strip().lower().replace("-", "_"))


def adapter_api(class_name: str) -> ProviderAPI | None:
    """The entry whose adapter class is ``class_name``."""
    return next((api for api in PROVIDER_APIS if api.adapter == class_name), None)


__all__ = ["APIS", "PROVIDER_APIS", "ProviderAPI", "adapter_api", "api_named"]
