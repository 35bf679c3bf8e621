"""Every spelling of an API that messages store (``AssistantMessage.api``, set from the adapter's
``api``) is mapped to its entry by the one table of provider APIs, at the edge, so stored
messages keep their spelling and still name their API."""

from __future__ import annotations

import importlib

import pytest

from openprogram.providers.apis import PROVIDER_APIS, api_named


@pytest.mark.parametrize("entry", PROVIDER_APIS, ids=lambda e: e.name)
def test_the_message_spelling_of_each_adapter_names_its_entry(entry: object) -> None:
    from openprogram.providers.apis import ProviderAPI

    assert isinstance(entry, ProviderAPI)
    source = importlib.util.find_spec(entry.module_path)
    assert source is not None and source.origin is not None
    # read the class attribute from the source: importing an adapter needs its SDK
    text = open(source.origin, encoding="utf-8").read()
    head = text.partition(f"class {entry.adapter}")[2]
    spelling = head.partition('    api = "')[2].partition('"')[0]
    assert spelling, f"{entry.adapter} has no api attribute"
    found = api_named(spelling)
    assert found is not None and found.name == entry.name, (spelling, found)


def test_an_unknown_spelling_names_nothing() -> None:
    assert api_named("anthropic-completions") is None
    assert api_named("") is None
