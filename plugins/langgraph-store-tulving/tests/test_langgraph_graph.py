"""The store inside real LangGraph graphs: nodes read and write it through the runtime,
across invocations and threads (with a checkpointer), sync and async."""

from __future__ import annotations

import asyncio
from typing import Any, TypedDict

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from langgraph.store.tulving import TulvingStore


class State(TypedDict, total=False):
    message: str
    reply: str
    recalled: list[str]


class Context(TypedDict):
    user_id: str


def _remember(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    namespace = ("memories", runtime.context["user_id"])
    message = state["message"]
    if message.startswith("remember: "):
        key = f"fact-{len(runtime.store.search(namespace, limit=1000))}"
        runtime.store.put(namespace, key, {"text": message.removeprefix("remember: ")})
    return {}


def _answer(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    namespace = ("memories", runtime.context["user_id"])
    hits = runtime.store.search(namespace, query=state["message"], limit=2)
    block = runtime.store.curate(namespace, state["message"], token_budget=120)
    return {"recalled": [h.value["text"] for h in hits], "reply": block.content}


async def _aanswer(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    namespace = ("memories", runtime.context["user_id"])
    hits = await runtime.store.asearch(namespace, query=state["message"], limit=2)
    block = await runtime.store.acurate(namespace, state["message"], token_budget=120)
    return {"recalled": [h.value["text"] for h in hits], "reply": block.content}


def _graph(answer: Any) -> StateGraph:
    builder = StateGraph(State, context_schema=Context)
    builder.add_node("remember", _remember)
    builder.add_node("answer", answer)
    builder.add_edge(START, "remember")
    builder.add_edge("remember", "answer")
    builder.add_edge("answer", END)
    return builder


def test_a_graph_reads_what_earlier_runs_wrote(store: TulvingStore) -> None:
    graph = _graph(_answer).compile(store=store, checkpointer=InMemorySaver())
    ann = {"user_id": "ann"}
    for i, fact in enumerate(["I am vegetarian", "I live in Lisbon", "My cat is called Miso"]):
        graph.invoke({"message": f"remember: {fact}"}, {"configurable": {"thread_id": f"t{i}"}},
                     context=ann)
    graph.invoke({"message": "remember: I eat fish daily"}, {"configurable": {"thread_id": "b"}},
                 context={"user_id": "bob"})
    out = graph.invoke({"message": "what is my cat called"},
                       {"configurable": {"thread_id": "new"}}, context=ann)
    assert out["recalled"][0] == "My cat is called Miso"
    assert "Miso" in out["reply"] and "fish" not in out["reply"]
    assert store.memory.count_tokens(out["reply"]) <= 120
    assert store.list_namespaces(prefix=("memories",)) == [("memories", "ann"),
                                                           ("memories", "bob")]


def test_an_async_graph_uses_the_async_operations(store: TulvingStore) -> None:
    graph = _graph(_aanswer).compile(store=store)

    async def run() -> dict[str, Any]:
        ctx = {"user_id": "ann"}
        await graph.ainvoke({"message": "remember: I work as an engineer"}, context=ctx)
        await graph.ainvoke({"message": "remember: I am vegetarian"}, context=ctx)
        return await graph.ainvoke({"message": "what work do I do"}, context=ctx)

    out = asyncio.run(run())
    assert out["recalled"][0] == "I work as an engineer"
    assert "engineer" in out["reply"]
