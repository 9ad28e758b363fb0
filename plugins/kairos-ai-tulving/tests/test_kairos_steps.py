"""recall / orient / remember steps, the budget validator and the manifest's steps."""

from __future__ import annotations

from typing import Any

import kairos
import pytest
from kairos import SKIP, Schema, Step, StepContext, StepStatus, Workflow, WorkflowStatus
from kairos.validators import StructuralValidator
from kairos_ai_tulving import (
    MANIFEST,
    PluginConfigError,
    bind,
    context_output,
    fits_budget,
    make_recall,
    make_remember,
    orient_step,
    recall_step,
    remember_step,
)
from kairos_ai_tulving.steps import query_text

import tulving


def _seed(memory: Any) -> None:
    memory.store("Payments deploy with canary releases behind a feature flag",
                 type="DECISION", key="deploy/payments")
    memory.store("The billing database runs PostgreSQL 15 with pgvector", type="FACT",
                 key="infra/billing-db")
    for i in range(40):
        memory.store(f"Deploy note {i}: the payments canary watched error rates for "
                     f"{10 + i} minutes before promotion to all regions", type="OBSERVATION")


def test_recall_curates_from_inputs_and_state_within_its_budget(memory: Any) -> None:
    _seed(memory)
    ticket = Step("ticket", lambda ctx: {"title": "payments deploy", "severity": 2,
                                         "api_token": "never-a-query-word"})
    recall = recall_step(memory, depends_on=["ticket"], query_from=("ticket", "extra"),
                         budget=120)
    result = Workflow("r", [ticket, recall]).run({"extra": "canary"})
    assert result.status is WorkflowStatus.COMPLETE
    out = result.final_state["recall"]
    assert out["mode"] == "query" and out["degraded"] is None
    assert "canary releases behind a feature flag" in out["context"]
    assert 0 < out["used"] <= 120 and out["budget"] == 120  # not redacted in final_state
    assert memory.count_tokens(out["context"]) == out["used"]
    query = query_text(StepContext(state=kairos.StateStore(), inputs={
        "ticket": {"title": "payments deploy", "severity": 2, "api_token": "never-a-query-word"}}),
        ["ticket"])
    assert query == "payments deploy 2"  # the sensitive field is not part of the query
    assert out["omitted"] > 0  # 40 notes do not fit in 120 tokens


def test_recall_with_no_query_gives_the_orient_briefing(memory: Any) -> None:
    _seed(memory)
    result = Workflow("r", [recall_step(memory)]).run({"query": "   "})
    out = result.final_state["recall"]
    assert out["mode"] == "orient" and "canary releases" in out["context"]
    oriented = Workflow("o", [orient_step(memory, budget=200)]).run()
    assert oriented.final_state["orient"]["mode"] == "orient"
    assert oriented.final_state["orient"]["used"] <= 200


def test_recall_reads_only_the_state_it_declares(memory: Any) -> None:
    step = recall_step(memory, query_from=("query",))
    assert step.read_keys == ["query"] and step.write_keys == []
    sneaky = Step("recall", make_recall(memory, query_from=("secret_plan",)),
                  read_keys=["query"])
    result = Workflow("r", [sneaky]).run({"query": "q", "secret_plan": "x"})
    assert result.status is WorkflowStatus.FAILED  # the scope wall, enforced by Kairos


def test_remember_supersedes_under_the_template_key(memory: Any) -> None:
    answers = iter([{"answer": "Use blue-green", "notes": "n"}, {"answer": "Use canary"}])
    steps = [Step("answer", lambda ctx: next(answers)),
             remember_step(memory, key="answers/{topic}", source="answer", field="answer",
                           type="DECISION", tags=["release"])]
    workflow = Workflow("w", steps)
    first = workflow.run({"topic": "Release Strategy"}).final_state["remember"]
    second = workflow.run({"topic": "Release Strategy"}).final_state["remember"]
    assert first["key"] == second["key"] == "kairos/answers/Release-Strategy"
    assert second["superseded"] == first["id"] and second["type"] == "DECISION"
    entry = memory.get("kairos/answers/Release-Strategy")
    assert entry.content == "Use canary" and "release" in entry.tags
    assert entry.metadata["kairos"] == {"step": "remember", "source": "answer"}
    assert [e.content for e in memory.history("kairos/answers/Release-Strategy")] == [
        "Use canary", "Use blue-green"]


@pytest.mark.parametrize("topic", ["../../deploy/payments", "deploy/payments", "..", "a//b",
                                   "x" * 500])
def test_state_cannot_steer_remember_out_of_its_prefix(memory: Any, topic: str) -> None:
    memory.store("Payments deploy with canary releases", type="DECISION", key="deploy/payments")
    steps = [Step("answer", lambda ctx: "overwrite attempt"),
             remember_step(memory, key="{topic}", source="answer", prefix="kairos/answers")]
    result = Workflow("w", steps).run({"topic": topic})
    assert memory.get("deploy/payments").content == "Payments deploy with canary releases"
    if result.status is WorkflowStatus.COMPLETE:
        key = result.final_state["remember"]["key"]
        assert key.startswith("kairos/answers/") and "/" not in key[len("kairos/answers/"):]
        assert ".." not in key and len(key) <= 200


def test_remember_masks_secrets_and_sensitive_fields(memory: Any) -> None:
    output = {"summary": "connect with postgresql://app:s3cr3t-pw@db:5432/x",
              "password": "hunter2", "nested": {"client_secret": "abc", "region": "eu"}}
    steps = [Step("work", lambda ctx: output),
             remember_step(memory, key="runs/last", source="work")]
    Workflow("w", steps).run()
    content = memory.get("kairos/runs/last").content
    for leaked in ("s3cr3t-pw", "hunter2", "abc"):
        assert leaked not in content
    assert "password: [REDACTED]" in content and '"region": "eu"' in content


def test_remember_skips_when_there_is_nothing_to_remember(memory: Any) -> None:
    steps = [Step("maybe", lambda ctx: SKIP),
             remember_step(memory, key="runs/x", source="maybe")]
    result = Workflow("w", steps).run()
    assert result.step_results["remember"].status is StepStatus.SKIPPED
    assert memory.list_keys("kairos/") == []


def test_remember_output_is_bounded(memory: Any) -> None:
    steps = [Step("big", lambda ctx: "word " * 50_000),
             remember_step(memory, key="runs/big", source="big")]
    assert Workflow("w", steps).run().status is WorkflowStatus.COMPLETE
    assert len(memory.get("kairos/runs/big").content) == 4_000


def test_remember_can_degrade_instead_of_failing(memory: Any) -> None:
    steps = [Step("a", lambda ctx: "x"),
             remember_step(memory, key="runs/a", source="a", required=False)]
    workflow = Workflow("w", steps)
    memory.close()
    out = workflow.run().final_state["remember"]
    assert out == {"id": None, "key": "kairos/runs/a", "type": None, "superseded": None,
                   "degraded": "ConfigError"}


def test_fits_budget_recounts_with_the_memory_tokenizer(memory: Any) -> None:
    text = "canary releases " * 50
    cost = memory.count_tokens(text)
    assert fits_budget(cost, memory=memory)(text) is True
    message = fits_budget(cost - 1, memory=memory)(text)
    assert message == f"curated context is {cost} tokens, over its budget of {cost - 1}"
    assert fits_budget(0, memory=memory)("") is True
    assert "expected the curated context as a string" in fits_budget(5, memory=memory)(5)
    # in a Kairos contract, through Kairos' own validator
    schema = Schema({"context": str}, validators={"context": [fits_budget(10, memory=memory)]})
    verdict = StructuralValidator().validate({"context": text}, schema)
    assert not verdict.valid and "over its budget of 10" in verdict.errors[0].message


def test_fits_budget_without_a_tokenizer_falls_back_to_bytes(memory: Any) -> None:
    memory.startup()
    memory.close()
    assert fits_budget(10, memory=memory)("short") is True  # 5 bytes <= 10 tokens
    assert "cannot count tokens (ConfigError)" in fits_budget(3, memory=memory)("short")


def test_a_recall_over_its_budget_fails_its_contract(memory: Any) -> None:
    _seed(memory)

    def cheat(ctx: StepContext) -> dict[str, Any]:  # says it used 10, sends far more
        return {"context": "canary " * 400, "used": 10, "budget": 50, "ids": [],
                "omitted": 0, "mode": "query", "degraded": None}

    step = Step("recall", cheat, output_contract=context_output(50, memory))
    result = Workflow("w", [step]).run()
    assert result.step_results["recall"].status is StepStatus.FAILED_FINAL


def test_manifest_steps_use_the_bound_memory(memory: Any) -> None:
    _seed(memory)
    steps = [MANIFEST.build_step("recall", read_keys=["query"]),
             Step("answer", lambda ctx: {"text": "canary, " + str(ctx.inputs["recall"]["used"])},
                  depends_on=["recall"]),
             MANIFEST.build_step("remember", depends_on=["answer"], read_keys=["memory_key"])]
    workflow = Workflow("m", steps)
    with pytest.raises(PluginConfigError):  # nothing bound: a loud configuration error
        MANIFEST.steps["recall"].action(StepContext(state=kairos.StateStore(), inputs={}))
    with bind(memory):
        result = workflow.run({"query": "payments deploy", "memory_key": "m/answer"})
    assert result.status is WorkflowStatus.COMPLETE
    assert "canary releases" in result.final_state["recall"]["context"]
    # a state value is one key segment: its "/" cannot open a path
    assert memory.get("kairos/m-answer").content.startswith("text: canary, ")
    assert workflow.run({"query": "q", "memory_key": "k"}).status is WorkflowStatus.FAILED
    with bind(memory):
        out = Workflow("o", [MANIFEST.build_step("orient")]).run().final_state["orient"]
    assert out["mode"] == "orient" and out["used"] <= 1500


def test_manifest_remember_needs_one_source_or_a_name(memory: Any) -> None:
    steps = [Step("a", lambda ctx: "x"), Step("b", lambda ctx: "y"),
             MANIFEST.build_step("remember", depends_on=["a", "b"])]
    with bind(memory):
        result = Workflow("w", steps).run({"memory_key": "k"})
    assert result.step_results["remember"].status is StepStatus.FAILED_FINAL


@pytest.mark.parametrize("factory, kwargs", [
    (make_recall, {"budget": -1}), (make_recall, {"budget": True}),
    (make_recall, {"budget": 10**7}), (make_recall, {"query_from": []}),
    (make_recall, {"query_from": [""]}), (make_recall, {"types": ["NOPE"]}),
    (make_recall, {"tags": [1]}), (make_recall, {"required": "no"}),
    (make_recall, {"binding": "no spaces"}),
    (make_remember, {"key": ""}), (make_remember, {"key": "a/{b.c}"}),
    (make_remember, {"key": "a/{b!r}"}), (make_remember, {"key": "a/{b:>10}"}),
    (make_remember, {"key": "../{b}"}), (make_remember, {"key": "a b/{c}"}),
    (make_remember, {"key": "a/{"}), (make_remember, {"key": "k", "type": "MEMO"}),
    (make_remember, {"key": "k", "importance": 2}), (make_remember, {"key": "k", "prefix": "/"}),
    (make_remember, {"key": "k", "max_chars": 0}), (make_remember, {"key": "k", "source": ""}),
])
def test_bad_step_arguments_are_refused_when_the_step_is_built(
        memory: Any, factory: Any, kwargs: dict[str, Any]) -> None:
    with pytest.raises(PluginConfigError):
        factory(memory, **kwargs)


def test_bad_memory_and_budget_arguments() -> None:
    with pytest.raises(PluginConfigError):
        make_recall(memory="agent.db")
    with pytest.raises(PluginConfigError):
        fits_budget(-5)
    with pytest.raises(PluginConfigError):
        remember_step(None, key="k")  # no source, no dependency
    with pytest.raises(tulving.ValidationError):
        tulving.Memory(":memory:", agent_id="a", storage="memory",
                       embedder="hashing").count_tokens(b"bytes")  # type: ignore[arg-type]


def test_the_manifest_reference_workflow_on_the_bound_memory(memory: Any) -> None:
    def answer(ctx: StepContext) -> dict[str, str]:
        return {"answer": f"seen {len(ctx.inputs['recall']['ids'])} memories"}

    factory = MANIFEST.workflows["reference"]
    with pytest.raises(PluginConfigError):
        factory(answer=answer)  # the hook needs a memory: none given, none bound
    with pytest.raises(PluginConfigError):
        factory(memory, answer="not a step")
    with bind(memory):
        workflow = factory(answer=answer, key="notes/{topic}", budget=300)
        first = workflow.run({"query": "notes", "topic": "n"})
        second = workflow.run({"query": "seen memories notes", "topic": "n"})
    assert first.status is second.status is WorkflowStatus.COMPLETE
    assert memory.get("kairos/notes/n").content.startswith("seen ")
    assert first.final_state["remember"]["id"] in second.final_state["recall"]["ids"]
    assert second.final_state["recall"]["budget"] == 300
