"""One Memory, many users (issue 41): workflows built over a user's view keep recall and
everything a run writes with that user, checked on kairos-ai itself and read back by a
second process through the CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

from kairos import Schema, Step, Workflow, WorkflowStatus
from kairos_ai_tulving import TulvingHooks, recall_step


def _note(ctx: Any) -> dict[str, str]:
    return {"note": f"handled: {ctx.state.get('query')}"}


def test_a_users_recall_and_run_records_stay_with_that_user(make_memory: Any) -> None:
    memory = make_memory()
    ann = memory.view(agent_id="kairos-runner", user_id="ann")
    bo = memory.view(agent_id="kairos-runner", user_id="bo")
    ann.store("Ann's bank sends codes to the number ending 5521", type="FACT")
    bo.store("Bo wants answers in Portuguese", type="PREFERENCE")
    contexts = {}
    for name, view in (("ann", ann), ("bo", bo)):
        workflow = Workflow("support", [
            recall_step(view, budget=400),
            Step("note", _note, depends_on=["recall"], read_keys=["query"],
                 output_contract=Schema({"note": str}))],  # validated: a DECISION
            hooks=[TulvingHooks(view)])
        run = workflow.run({"query": f"what to keep in mind for {name}'s ticket 77?"})
        assert run.status is WorkflowStatus.COMPLETE
        contexts[name] = run.final_state["recall"]["context"]
    assert "5521" in contexts["ann"] and "Portuguese" not in contexts["ann"]
    assert "Portuguese" in contexts["bo"] and "5521" not in contexts["bo"]
    # what Ann's run wrote (its decision, its narrative) is hers: Bo's briefing and search
    # never show it
    bo_sees = " ".join(r.entry.content for r in bo.search("handled ticket 77 ann", 20))
    assert "ann's ticket" not in bo_sees
    assert "ann's ticket" not in bo.curate(token_budget=2000).content
    assert "ann's ticket" in " ".join(
        r.entry.content for r in ann.search("handled ticket 77 ann", 20))
    # each user's procedure counts that user's runs only
    assert ann.get("kairos/support/procedure").success_count == 1
    assert bo.get("kairos/support/procedure").success_count == 1


def test_a_second_process_sees_the_same_split(make_memory: Any, tmp_path: Any) -> None:
    memory = make_memory("users.db")
    ann = memory.view(agent_id="kairos-runner", user_id="ann")
    ann.store("Ann is allergic to peanuts", type="FACT")
    Workflow("support", [recall_step(ann, budget=400)], hooks=[TulvingHooks(ann)]).run(
        {"query": "allergies?"})
    memory.close()
    path = str(tmp_path / "users.db")

    def search(user: str) -> list[str]:
        out = subprocess.run(
            [sys.executable, "-m", "tulving.interfaces.cli.main", "search", "peanuts",
             "--json", "--path", path, "--agent-id", "kairos-runner", "--user-id", user,
             "--embedder", "hashing", "--vectors", "exact"],
            capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        return [r["content"] for r in json.loads(out.stdout)["results"]]

    assert "Ann is allergic to peanuts" in search("ann")
    assert search("bo") == []
