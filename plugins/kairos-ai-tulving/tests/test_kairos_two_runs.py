"""The issue's main scenario on kairos-ai itself: recall -> LLM step -> remember, twice.

The "LLM" is a deterministic step function that answers from what recall gave it, which
is the contract a real model step has (it reads ``ctx.inputs["recall"]["context"]``).
"""

from __future__ import annotations

from typing import Any

import kairos
from kairos import StepStatus, WorkflowStatus
from kairos_ai_tulving import build_reference_workflow


def answer_from_context(ctx: kairos.StepContext) -> dict[str, str]:
    context = ctx.inputs["recall"]["context"]
    query = ctx.state.get("query")
    if "canary" in context:
        return {"answer": f"As decided before: canary releases ({query})."}
    return {"answer": f"Deploy the payments service with canary releases ({query})."}


def test_second_run_recalls_what_the_first_remembered(memory: Any) -> None:
    workflow = build_reference_workflow(memory, answer=answer_from_context)

    first = workflow.run({"query": "how do we deploy the payments service?",
                          "topic": "payments-deploy"})
    assert first.status is WorkflowStatus.COMPLETE
    assert first.final_state["recall"]["degraded"] is None
    assert "canary" not in first.final_state["recall"]["context"]  # nothing known yet
    stored = first.final_state["remember"]
    assert stored["key"] == "kairos/answers/payments-deploy" and stored["superseded"] is None
    assert memory.get("kairos/answers/payments-deploy").content.startswith(
        "Deploy the payments service with canary releases")

    second = workflow.run({"query": "deploying payments to production",
                           "topic": "payments-deploy"})
    assert second.status is WorkflowStatus.COMPLETE
    recalled = second.final_state["recall"]
    assert "Deploy the payments service with canary releases" in recalled["context"]
    assert stored["id"] in recalled["ids"]
    assert recalled["used"] <= recalled["budget"] == 1500
    assert second.final_state["answer"]["answer"].startswith("As decided before")
    # run 2's answer superseded run 1's under the same key, the chain kept
    assert second.final_state["remember"]["superseded"] == stored["id"]
    history = memory.history("kairos/answers/payments-deploy")
    assert history[0].content.startswith("As decided before: canary releases")
    assert history[1].content.startswith("Deploy the payments service with canary releases")
    assert history[1].superseded_by == history[0].id


def test_each_run_is_one_session_with_a_summary_and_a_counted_procedure(memory: Any) -> None:
    workflow = build_reference_workflow(memory, answer=answer_from_context)
    hooks = workflow._hooks[0]
    reports = []
    for topic in ("a", "b"):
        result = workflow.run({"query": f"release topic {topic}", "topic": topic})
        assert result.status is WorkflowStatus.COMPLETE
        reports.append(hooks.last_run)
    first, second = reports
    assert first.session_id and second.session_id and first.session_id != second.session_id
    assert first.errors == () and second.errors == ()
    for report in reports:
        summary = memory.get(report.summary_id)
        assert summary.type.value == "SUMMARY"
        assert summary.metadata["summary_of_session"] == report.session_id
        assert "Kairos workflow tulving-reference" in summary.content
    assert memory.session_id is None  # the hook ended what it started
    procedure = memory.get("kairos/tulving-reference/procedure")
    assert procedure.type.value == "PROCEDURE"
    assert (procedure.success_count, procedure.failure_count) == (2, 0)
    assert "recall -> answer (after recall) -> remember (after answer)" in procedure.content


def test_a_caller_session_is_joined_and_left_open(memory: Any) -> None:
    workflow = build_reference_workflow(memory, answer=answer_from_context)
    with memory.session(goal="release week") as session:
        result = workflow.run({"query": "release", "topic": "week"})
        assert result.status is WorkflowStatus.COMPLETE
        report = workflow._hooks[0].last_run
        assert report.session_id == session.id and report.summary_id is None
        assert memory.session_id == session.id  # still open: it is the caller's
    assert result.step_results["remember"].status is StepStatus.COMPLETED
