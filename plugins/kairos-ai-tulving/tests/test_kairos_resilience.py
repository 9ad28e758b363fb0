"""The hook never breaks a run: closed, refusing, full or interrupted memories.

Every memory here is a real one in a real failing state: closed, configured to refuse
what the hook writes, or on a file system that refuses to grow (a child process with
``RLIMIT_FSIZE`` at zero: every write to a file fails as on a full disk).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from kairos import ExecutionError, Schema, Step, StepStatus, Workflow, WorkflowStatus
from kairos_ai_tulving import TulvingHooks, build_reference_workflow

PLUGIN_ROOT = Path(__file__).resolve().parents[1]


def _steps() -> list[Step]:
    return [
        Step("plan", lambda ctx: {"plan": "ship it"}, output_contract=Schema({"plan": str})),
        Step("check", lambda ctx: 1 / 0, depends_on=["plan"]),
        Step("report", lambda ctx: "done"),
    ]


def test_a_closed_memory_leaves_the_run_as_it_would_be(memory: Any) -> None:
    memory.startup()
    memory.close()
    hooks = TulvingHooks(memory)
    result = Workflow("closed", _steps(), hooks=[hooks]).run()
    assert result.status is WorkflowStatus.FAILED  # because of `check`, not of the memory
    assert result.step_results["plan"].status is StepStatus.COMPLETED
    assert result.step_results["report"].status is StepStatus.COMPLETED
    report = hooks.last_run
    assert report.status == "failed" and report.written == ()
    failed = {op for op, kind in report.errors if kind == "ConfigError"}
    assert {"start_session", "store_decision", "store_failure", "store_run"} <= failed
    assert set(hooks.errors) == set(report.errors)


def test_a_memory_closed_mid_run_only_loses_the_later_records(memory: Any) -> None:
    def close_it(ctx: Any) -> str:
        memory.close()
        return "closed"

    hooks = TulvingHooks(memory)
    steps = [Step("plan", lambda ctx: {"plan": "ship"}, output_contract=Schema({"plan": str})),
             Step("close", close_it, depends_on=["plan"]),
             Step("after", lambda ctx: {"x": "y"}, depends_on=["close"],
                  output_contract=Schema({"x": str}))]
    result = Workflow("midway", steps, hooks=[hooks]).run()
    assert result.status is WorkflowStatus.COMPLETE
    assert len(hooks.last_run.written) == 1  # the decision of `plan`, before the close
    assert ("store_decision", "ConfigError") in hooks.last_run.errors
    assert ("end_session", "ConfigError") in hooks.last_run.errors


def test_a_memory_that_refuses_every_write(make_memory: Any) -> None:
    memory = make_memory(policy={"forbidden_categories": ["kairos"]})
    hooks = TulvingHooks(memory)
    result = Workflow("refused", _steps(), hooks=[hooks]).run()
    assert result.status is WorkflowStatus.FAILED
    kinds = {kind for _, kind in hooks.last_run.errors}
    assert kinds == {"PolicyViolation"}
    assert memory.list_keys("kairos/") == []
    assert hooks.last_run.summary_id is None  # nothing to summarise, and the session ended
    assert memory.session_id is None


def test_the_reference_workflow_on_a_closed_memory(memory: Any) -> None:
    workflow = build_reference_workflow(memory, answer=lambda ctx: {"answer": "anyway"})
    memory.close()
    result = workflow.run({"query": "anything", "topic": "t"})
    recall = result.final_state["recall"]
    assert recall == {"context": "", "used": 0, "budget": 1500, "ids": [], "omitted": 0,
                      "mode": "query", "degraded": "ConfigError"}
    assert result.final_state["answer"] == {"answer": "anyway"}
    # remember is required by default: its failure is the run's, said by Kairos
    assert result.step_results["remember"].status is StepStatus.FAILED_FINAL
    assert ("store_failure", "ConfigError") in workflow._hooks[0].last_run.errors


def test_an_interrupted_run_is_closed_by_the_next(memory: Any) -> None:
    def chatty(ctx: Any) -> str:
        ctx.increment_llm_calls(5)  # over the workflow's limit: Kairos aborts the run
        return "never"

    hooks = TulvingHooks(memory)
    aborted = Workflow("chatty", [Step("talk", chatty)], hooks=[hooks], max_llm_calls=2)
    with pytest.raises(ExecutionError):
        aborted.run()
    assert hooks.last_run is None and memory.session_id is not None  # still open
    Workflow("calm", [Step("work", lambda ctx: "ok")], hooks=[hooks]).run()
    assert hooks.last_run.workflow == "calm"
    assert memory.get("kairos/chatty/procedure").failure_count == 1
    assert memory.session_id is None

    with pytest.raises(ExecutionError):
        aborted.run()
    hooks.close()
    assert hooks.last_run.workflow == "chatty" and hooks.last_run.status == "interrupted"
    assert memory.get("kairos/chatty/procedure").failure_count == 2
    hooks.close()  # nothing open: a no-op
    assert hooks.last_run.status == "interrupted"


_FULL_DISK = textwrap.dedent("""
    import json, resource, signal, sys
    sys.path.insert(0, sys.argv[2])
    from kairos import Schema, Step, Workflow
    from tulving import Memory
    from kairos_ai_tulving import TulvingHooks

    memory = Memory(sys.argv[1], agent_id="kairos-runner", embedder="hashing",
                    vectors="exact")
    memory.store("kept from before the disk filled up", type="FACT", key="before/full")
    memory.flush()
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, hard))   # no file may grow any more
    hooks = TulvingHooks(memory)
    steps = [Step("plan", lambda ctx: {"plan": "x" * 5000}, output_contract=Schema({"plan": str})),
             Step("check", lambda ctx: 1 / 0, depends_on=["plan"])]
    result = Workflow("full", steps, hooks=[hooks]).run()
    resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    out = {"status": result.status.value, "errors": sorted(set(hooks.last_run.errors)),
           "written": len(hooks.last_run.written)}
    memory.store("written once there was room again", type="FACT", key="after/full")
    out["after"] = memory.get("after/full").content
    out["before"] = memory.get("before/full").content
    memory.close()
    print(json.dumps(out))
""")


@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_FSIZE semantics are Linux's")
def test_a_full_disk(tmp_path: Path) -> None:
    script = tmp_path / "full_disk.py"
    script.write_text(_FULL_DISK)
    env = {**os.environ, "TULVING_PLUGINS": "tulving"}
    done = subprocess.run([sys.executable, str(script), str(tmp_path / "m.db"), str(PLUGIN_ROOT)],
                          capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["status"] == "failed"  # `check` failed; the memory's state changed nothing
    assert out["written"] == 0
    operations = {op for op, _ in out["errors"]}
    assert {"store_decision", "store_failure", "store_run"} <= operations
    # what was there survives, and the memory works again once the disk has room
    assert out["before"] == "kept from before the disk filled up"
    assert out["after"] == "written once there was room again"
