"""provider_from_env, and importing openprogram never imports an SDK."""

from __future__ import annotations

import subprocess
import sys

import pytest

from openprogram.providers import provider_from_env


def test_importing_openprogram_does_not_import_sdks() -> None:
    code = (
        "import sys, openprogram, openprogram.providers\n"
        "from openprogram.providers import guard, provider_from_env, wire\n"
        "from openprogram.providers import AnthropicProvider, OpenAIChatProvider\n"
        "from openprogram.providers import OpenAIResponsesProvider\n"
        "import openprogram.providers.openai_chat, openprogram.providers.openai_responses\n"
        "from openprogram.providers import GeminiProvider, BedrockProvider\n"
        "import openprogram.providers.anthropic, openprogram.providers.gemini\n"
        "import openprogram.providers.bedrock\n"
        "roots = ('openai', 'anthropic', 'httpx2', 'google', 'boto3', 'botocore')\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in roots)\n"
        "print(loaded)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in (
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_BASE_URL",
        "GEMINI_API_KEY",
        "GOOGLE_API_KEY",
        "GEMINI_BASE_URL",
        "GOOGLE_GENAI_USE_VERTEXAI",
        "BEDROCK_BASE_URL",
    ):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


@pytest.mark.parametrize(
    ("api", "var"),
    [
        ("openai", "OPENAI_API_KEY"),
        ("openai-responses", "OPENAI_API_KEY"),
        ("anthropic", "ANTHROPIC_API_KEY"),
        ("gemini", "GEMINI_API_KEY"),
    ],
)
def test_missing_key_is_a_clear_error(clean_env: pytest.MonkeyPatch, api: str, var: str) -> None:
    with pytest.raises(ValueError, match=f"{var} is not set: export it"):
        provider_from_env(api)


def test_openai_from_env(clean_env: pytest.MonkeyPatch) -> None:
    from openprogram.providers.openai_chat import OpenAIChatProvider

    clean_env.setenv("OPENAI_API_KEY", "sk-fake-for-test")
    clean_env.setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
    provider = provider_from_env("openai")
    assert isinstance(provider, OpenAIChatProvider) and provider.streaming
    assert provider.client.api_key == "sk-fake-for-test"
    assert provider.base_url == "http://127.0.0.1:1/v1/"
    assert provider.client.max_retries == 0


def test_responses_and_anthropic_from_env(clean_env: pytest.MonkeyPatch) -> None:
    from openprogram.providers.anthropic import AnthropicProvider
    from openprogram.providers.openai_responses import OpenAIResponsesProvider

    clean_env.setenv("ANTHROPIC_API_KEY", "sk-ant-fake")
    provider = provider_from_env("anthropic", stream=False, max_retries=2)
    assert isinstance(provider, AnthropicProvider) and not provider.streaming
    assert provider.client.api_key == "sk-ant-fake" and provider.client.max_retries == 2
    # explicit arguments win over the environment
    responses = provider_from_env(
        "openai_responses", api_key="sk-explicit", base_url="http://localhost:2/v1"
    )
    assert isinstance(responses, OpenAIResponsesProvider)
    assert responses.client.api_key == "sk-explicit"
    assert responses.base_url.startswith("http://localhost:2/v1")


def test_unknown_api(clean_env: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValueError, match="unknown provider API 'mistral'"):
        provider_from_env("mistral")


def test_gemini_from_env(clean_env: pytest.MonkeyPatch) -> None:
    from openprogram.providers.gemini import GeminiProvider

    clean_env.setenv("GOOGLE_API_KEY", "g-fake")
    clean_env.setenv("GEMINI_BASE_URL", "http://127.0.0.1:1/")
    provider = provider_from_env("gemini")
    assert isinstance(provider, GeminiProvider) and provider.base_url == "http://127.0.0.1:1/"
    assert provider.client._api_client.api_key == "g-fake"
    clean_env.delenv("GEMINI_BASE_URL")
    # Vertex AI needs no key: Google's credential chain is used (not read here: no request made)
    vertex = provider_from_env(
        "gemini",
        vertexai=True,
        project="p",
        location="us-central1",
        credentials=_fake_google_credentials(),
    )
    assert vertex.base_url.startswith("https://us-central1-aiplatform.googleapis.com")


def _fake_google_credentials() -> object:
    from google.oauth2.credentials import Credentials

    return Credentials(token="t")


def test_bedrock_from_env(clean_env: pytest.MonkeyPatch) -> None:
    from openprogram.providers.bedrock import BedrockProvider

    clean_env.setenv("BEDROCK_BASE_URL", "http://127.0.0.1:2")
    provider = provider_from_env(
        "bedrock",
        region_name="eu-west-1",
        aws_access_key_id="AKIDFAKE",
        aws_secret_access_key="fake",
    )
    assert isinstance(provider, BedrockProvider)
    assert provider.base_url == "http://127.0.0.1:2"
    assert provider.client.meta.region_name == "eu-west-1"
    assert provider.client.meta.config.retries["total_max_attempts"] == 1
    with pytest.raises(TypeError, match="AWS credentials, not api_key"):
        BedrockProvider(api_key="k")


def test_adapters_exported_lazily_from_the_package() -> None:
    import openprogram.providers as providers
    from openprogram.providers.anthropic import AnthropicProvider

    assert providers.AnthropicProvider is AnthropicProvider
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        providers.Nope  # noqa: B018
