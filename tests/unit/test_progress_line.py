"""The CLI's progress bars (tqdm): shown on a terminal or when forced, one bar per stage,
silent in scripted runs."""

from __future__ import annotations

import io

from tulving.interfaces.cli.output import ProgressLine


def test_forced_bar_counts_each_stage_to_its_total() -> None:
    out = io.StringIO()
    progress = ProgressLine(out, force=True, min_interval=0)
    for done in range(0, 101, 25):
        progress("import", done, 100)
    progress("reindex", 3, 10)
    progress("reindex", 10, 10)
    text = out.getvalue()
    assert "import" in text and "100/100" in text and "10/10" in text
    assert text.endswith("\n")  # each finished stage ends its line


def test_silent_when_not_a_terminal() -> None:
    out = io.StringIO()
    progress = ProgressLine(out)
    progress("import", 5, 10)
    progress("import", 10, 10)
    assert out.getvalue() == "" and progress.enabled is False
