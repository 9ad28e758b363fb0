"""Hypothesis over the public input surfaces: the Python API and the CLI's arguments.
Whatever arrives, the answer is a result or a typed ``TulvingError`` (the CLI: a
documented exit code), a refused write writes nothing, and a curated block never
exceeds its budget."""

from __future__ import annotations

import contextlib
import io
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tulving import Memory, TulvingError, ValidationError

#: Text that is not valid Unicode: a lone surrogate somewhere in otherwise valid text (what
#: a JSON "\ud800" escape or a broken decoder produces); issue 34.
BROKEN = st.builds(lambda head, bad, tail: head + bad + tail, st.text(max_size=12),
                   st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF),
                   st.text(max_size=12))
ANY = st.recursive(
    st.none() | st.booleans() | st.integers(-10**12, 10**12) | st.floats(allow_nan=True)
    | st.text(max_size=60) | BROKEN | st.datetimes(timezones=st.none() | st.just(UTC)),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8) | BROKEN,
                                                                inner, max_size=4),
    max_leaves=8,
)
TEXTISH = (st.text(max_size=200) | BROKEN
           | st.sampled_from(["", " ", "\x00", "x" * 300_000]) | ANY)
FIELDS = st.fixed_dictionaries({}, optional={
    "type": st.sampled_from(["FACT", "fact", "GOSSIP", "", None]) | ANY,
    "key": st.sampled_from(["a/b", "../x", "a//b", "", "k" * 300]) | ANY,
    "tags": ANY, "importance": ANY, "pinned": ANY, "metadata": ANY, "scope": ANY,
    "valid_from": ANY, "entity": ANY, "attribute": ANY, "value": ANY, "dedup": ANY,
})
SETTINGS = settings(max_examples=120, deadline=None, database=None,
                    suppress_health_check=list(HealthCheck))


@pytest.fixture(scope="module")
def memory() -> Iterator[Memory]:
    with Memory(None, agent_id="fuzz", storage="memory", embedder="hashing",
                vectors="exact") as m:
        m.store("a seed memory about kiwis", type="FACT", key="seed")
        yield m


def count(m: Memory) -> int:
    return int(m.stats()["active"]) + int(m.stats()["archived"])


def attempt(m: Memory, call: Any, *, writes: bool) -> Any:
    before = count(m)
    try:
        return call()
    except TulvingError:
        if writes:
            assert count(m) == before, "a refused write changed the store"
        return None


@SETTINGS
@given(content=TEXTISH, fields=FIELDS)
def test_store_answers_or_refuses_typed(memory: Memory, content: Any,
                                        fields: dict[str, Any]) -> None:
    fields.setdefault("type", "FACT")
    attempt(memory, lambda: memory.store(content, **fields), writes=True)


@SETTINGS
@given(query=TEXTISH, top_k=ANY, mode=st.sampled_from(["hybrid", "lexical", "semantic", "key",
                                                      "nope"]) | ANY,
       budget=st.integers(-5, 3000) | ANY, since=ANY)
def test_reads_answer_or_refuse_typed_and_budgets_hold(memory: Memory, query: Any, top_k: Any,
                                                       mode: Any, budget: Any,
                                                       since: Any) -> None:
    attempt(memory, lambda: memory.search(query, top_k, mode=mode, since=since), writes=False)
    curated = attempt(memory, lambda: memory.curate(query, token_budget=budget), writes=False)
    if curated is not None:
        assert curated.token_count <= budget
        assert memory.count_tokens(curated.content) == curated.token_count
    attempt(memory, lambda: memory.get(query), writes=False)
    attempt(memory, lambda: memory.list_entries(top_k, query), writes=False)
    attempt(memory, lambda: memory.profile(query), writes=False)


@SETTINGS
@given(target=TEXTISH, hard=ANY, text=TEXTISH, subject=ANY)
def test_destructive_and_agent_calls_answer_or_refuse_typed(memory: Memory, target: Any,
                                                            hard: Any, text: Any,
                                                            subject: Any) -> None:
    attempt(memory, lambda: memory.forget(target, hard=hard), writes=True)
    attempt(memory, lambda: memory.correct(target, text), writes=True)
    attempt(memory, lambda: memory.remember(text, subject=subject), writes=True)
    attempt(memory, lambda: memory.clear(scope=target, confirm=hard), writes=True)


@SETTINGS
@given(bad=BROKEN, where=st.sampled_from(["content", "key", "tags", "metadata", "metadata key",
                                          "entity", "query", "curate", "get", "remember"]))
def test_a_lone_surrogate_anywhere_is_a_validation_error(memory: Memory, bad: str,
                                                         where: str) -> None:
    calls = {
        "content": lambda: memory.store(bad, type="FACT"),
        "key": lambda: memory.store("x", type="FACT", key=bad),
        "tags": lambda: memory.store("x", type="FACT", tags=[bad]),
        "metadata": lambda: memory.store("x", type="FACT", metadata={"k": [bad]}),
        "metadata key": lambda: memory.store("x", type="FACT", metadata={bad: 1}),
        "entity": lambda: memory.store("x", type="FACT", entity=bad, attribute="a", value="v"),
        "query": lambda: memory.search(bad),
        "curate": lambda: memory.curate(bad, token_budget=300),
        "get": lambda: memory.get(bad),
        "remember": lambda: memory.remember(bad),
    }
    before = count(memory)
    with pytest.raises(ValidationError):
        calls[where]()
    assert count(memory) == before


WORDS = ["store", "get", "search", "curate", "list", "--all", "forget", "--hard", "history",
         "export", "import", "clear", "--scope", "agent", "--yes", "-t", "FACT", "-k", "a/b",
         "--json", "--limit", "-5", "0", "999999999999", "--cursor", "../../etc", "\x00",
         "--since", "yesterday", "2026-01-01", "-n", "nan", "--mode", "nope", "profile",
         "consolidate", "--apply", "maintenance", "purge", "--force", "--dry-run", "stats",
         "erase", "user", "serve", "--port", "70000", "--host", "0.0.0.0", "x" * 50]
EXIT_CODES = {0, 1, 2, 3, 4, 5, 6, 7}


@settings(max_examples=150, deadline=None, database=None,
          suppress_health_check=list(HealthCheck))
@given(argv=st.lists(st.sampled_from(WORDS) | st.text(max_size=12) | BROKEN, min_size=1,
                    max_size=7))
def test_cli_arguments_give_a_documented_exit_code(tmp_path_factory: Any,
                                                   argv: list[str]) -> None:
    from tulving.interfaces.cli.main import main

    path = str(tmp_path_factory.getbasetemp() / "cli-fuzz.db")
    out, err = io.StringIO(), io.StringIO()
    # in a scratch folder: `export export` once wrote a bundle named `export` into the
    # repository root (issue 33)
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), \
            contextlib.chdir(tmp_path_factory.getbasetemp()):
        try:
            code = main([*argv, "--path", path, "--embedder", "hashing", "--vectors",
                         "exact"]) if "serve" not in argv else 2
        except SystemExit as exc:  # argparse's own usage errors
            code = exc.code if isinstance(exc.code, int) else 2
    assert code in EXIT_CODES, (argv, code, err.getvalue()[-500:])
    assert "Traceback" not in err.getvalue(), (argv, err.getvalue()[-1500:])
    assert datetime.now(UTC)  # the process is still whole
