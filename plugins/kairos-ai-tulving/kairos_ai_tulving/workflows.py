"""The reference workflow: recall -> your LLM step -> remember, with TulvingHooks.

The LLM step is the caller's (``answer=``): the plugin stays free of any model client,
like ``kairos-ai-evidence``'s reference workflow. The walls are Kairos' scoped state:

* ``recall``   reads ``query``; writes only its output (the curated context);
* ``answer``   (yours) depends on ``recall``, reads ``query``; returns ``{"answer": str}``;
* ``remember`` stores ``answer["answer"]`` under ``kairos/<key>``, reading only the key
  template's placeholders (``topic`` for the default ``answers/{topic}``).

Run it with ``workflow.run({"query": ..., "topic": ...})``; a later run whose query is
related recalls what this one remembered.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kairos import Schema, Step, StepContext, Workflow

from kairos_ai_tulving.binding import DEFAULT, bound
from kairos_ai_tulving.errors import PluginConfigError
from kairos_ai_tulving.hooks import TulvingHooks
from kairos_ai_tulving.steps import DEFAULT_BUDGET, recall_step, remember_step

ANSWER_OUTPUT = Schema({"answer": str})


def build_reference_workflow(
    memory: Any = None, *, answer: Callable[[StepContext], object],
    key: str = "answers/{topic}", budget: int = DEFAULT_BUDGET,
    name: str = "tulving-reference", hooks: bool = True, binding: str = DEFAULT,
    max_llm_calls: int = 10,
) -> Workflow:
    """Build the reference workflow. ``memory`` (else the one bound as ``binding``) backs
    all three steps and the hook; ``answer(ctx)`` reads ``ctx.inputs["recall"]["context"]``
    and ``ctx.state.get("query")`` and returns ``{"answer": "..."}``. The hook records
    failures, the session and the workflow's outcome; decisions are left to ``remember``
    (``decisions=False``), so an answer is not stored twice."""
    if not callable(answer):
        raise PluginConfigError("answer must be the step action of your LLM step")
    steps = [
        recall_step(memory, budget=budget, query_from=("query",), binding=binding),
        Step("answer", answer, depends_on=["recall"], read_keys=["query"], write_keys=[],
             output_contract=ANSWER_OUTPUT),
        remember_step(memory, key=key, source="answer", field="answer", binding=binding),
    ]
    hook_list = []
    if hooks:
        hook_list.append(TulvingHooks(memory if memory is not None else bound(binding),
                                      decisions=False))
    return Workflow(name, steps, hooks=hook_list, max_llm_calls=max_llm_calls)
