"""The run's table: one aligned line per scenario under a heading (name, result, termination,
model calls, time), a name too long for the terminal folded onto more lines, each outcome
spelled out; laid out in one pass over the rows."""

from __future__ import annotations

import io

from rich.console import Console

from openprogram_testing.frontends.report.terminal import Row, ScenarioReporter, _table


def rows() -> list[Row]:
    return [
        Row("a", "alpha", "a.yaml", termination="completed", model_calls=2, duration_s=0.003),
        Row("b", "beta", "b.yaml", passed=False, termination="error", model_calls=1),
        Row("c", "gamma", "c.yaml", passed=False, invalid=True),
        Row("d", "delta", "d.yaml", termination="completed", model_calls=1, snapshot_written=True),
    ]


def test_each_scenario_is_one_aligned_line() -> None:
    lines = _table(rows(), 120).plain.splitlines()
    assert lines[0] == "OpenProgram scenarios"
    assert lines[1].split() == ["scenario", "result", "termination", "model", "calls", "time"]
    assert [line.split()[:4] for line in lines[2:]] == [
        ["alpha", "PASS", "completed", "2"],
        ["beta", "FAIL", "error", "1"],
        ["gamma", "INVALID", "-", "-"],
        ["delta", "PASS", "(snapshot", "written)"],
    ]
    assert lines[2].endswith("3 ms") and len({len(line) for line in lines[2:]}) == 1
    assert lines[1].index("result") == lines[2].index("PASS") == lines[4].index("INVALID")


def test_a_long_name_folds_and_keeps_the_columns_on_the_first_line() -> None:
    long = Row("x", "n" * 100, "x.yaml", termination="completed", model_calls=3)
    lines = _table([long, *rows()[:1]], 60).plain.splitlines()
    assert all(len(line) <= 60 for line in lines)
    first = lines[2]
    assert first.startswith("n") and "PASS" in first and first.rstrip().endswith("0 ms")
    folded = [line for line in lines[3:] if set(line.strip()) == {"n"}]
    assert "".join(line.strip() for line in [first.split()[0], *folded]) == "n" * 100
    assert lines[-1].split()[:2] == ["alpha", "PASS"]


def test_the_printed_report_holds_every_row_and_the_count() -> None:
    buffer = io.StringIO()
    out = Console(file=buffer, width=100, color_system=None)
    reporter = ScenarioReporter(out, out)
    reporter.rows = {r.nodeid: r for r in rows()}
    reporter.print_report()
    text = buffer.getvalue()
    for name in ("alpha", "beta", "gamma", "delta"):
        assert f"\n{name} " in text
    assert "2 passed, 1 failed, 1 invalid" in text


def test_a_name_s_markup_and_control_codes_are_shown_as_text() -> None:
    # an escape sequence in a name would restyle the terminal (or move its cursor, clear it)
    buffer = io.StringIO()
    out = Console(file=buffer, width=100, color_system="truecolor", force_terminal=True)
    reporter = ScenarioReporter(out, out)
    hostile = Row("h", "[bold red]x[/] \x1b[31mred\x1b[0m \x07bell", "h.yaml")
    failing = Row("f", "f", "f.yaml", passed=False, failure="line one\n\x1b[2Jcleared?\tok")
    reporter.rows = {"h": hostile, "f": failing}
    reporter.print_report()
    text = buffer.getvalue()
    assert "[bold red]x[/]" in text  # markup is shown, not applied
    assert "\x1b[31mred" not in text
    assert "\\x1b[31mred\\x1b[0m \\x07bell" in text  # the name's own codes are spelled out
    assert "\x07" not in text
    assert "line one\n\\x1b" in text  # a failure keeps its lines, its codes spelled out
    assert "\x1b[2J" not in text
