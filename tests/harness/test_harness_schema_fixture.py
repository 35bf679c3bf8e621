"""The ``schema_driven_provider`` fixture: a seeded schema-driven model per test."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]


def test_the_fixture_calls_the_offered_tools_with_valid_arguments(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(
        """
        from openprogram import function

        SEEN = []

        @function
        def book(city: str, nights: int) -> str:
            \"\"\"Book a hotel.\"\"\"
            assert isinstance(city, str) and isinstance(nights, int)
            SEEN.append((city, nights))
            return "booked"

        def test_drives_the_tool(schema_driven_provider, loop_runner):
            trace = loop_runner(schema_driven_provider, "Book something.", tools=[book])
            assert trace.termination == "completed"
            assert [r.tool_name for r in trace.tool_results] == ["book"]
            assert not trace.tool_results[0].is_error
            assert len(schema_driven_provider.requests) == 2

        def test_same_test_same_arguments(schema_driven_provider, loop_runner):
            loop_runner(schema_driven_provider, "Book something.", tools=[book])
            first = SEEN[-1]
            from openprogram_testing import SchemaDrivenProvider
            again = SchemaDrivenProvider(seed=schema_driven_provider.seed)
            loop_runner(again, "Book something.", tools=[book])
            assert SEEN[-1] == first
        """
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)
