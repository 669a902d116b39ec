"""The peers of the loop benchmark that persist a conversation the way their own docs say, on SQLite or PostgreSQL.

Each peer stores the conversation after every turn and reads it back from the database at the start of the next
(nothing of it is kept in memory between turns), through a connection (or pool) it keeps for the whole run, as a
site keeps its own:

- openai-agents with its sessions: ``SQLiteSession(id, path)`` (built in; WAL, as it sets it) on SQLite, and
  ``SQLAlchemySession(id, engine=...)`` on PostgreSQL over one async engine (``postgresql+psycopg://``, the
  psycopg 3 the app uses). ``Runner.run(..., session=session)`` reads the session's items and appends the turn's.
- pydantic-ai with its message-history recipe: ``result.all_messages_json()`` stored in one row per
  conversation, loaded with ``ModelMessagesTypeAdapter.validate_json`` each turn, through the stdlib ``sqlite3``
  (its defaults) or ``psycopg``, each write committed.
- LangGraph with a checkpointer: the graph of its tutorial (a model node with the tool bound, ``ToolNode``,
  ``tools_condition``) compiled with ``SqliteSaver`` on a ``sqlite3`` connection or ``PostgresSaver`` on a
  ``psycopg`` connection set up as its docs say (autocommit, ``prepare_threshold=0``, ``dict_row``); the model
  through ``langchain-openai``'s ``ChatOpenAI``. It checkpoints after every step of the graph, and each
  ``invoke`` on the conversation's ``thread_id`` reads the last checkpoint back.

They run in the benchmark's own process, as the in-memory peers do; PostgreSQL is the private cluster of
``_postgres.py`` (its socket in ``var/postgres``), the database the app's runner uses, in tables of their own.
"""

from __future__ import annotations

import asyncio
import itertools
import sqlite3
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

from bench._model import ANSWER, QUESTION
from bench._sides import add
from tests.services import POSTGRES_USER

_conversations = itertools.count(1)


class PydanticAIStored:
    """pydantic-ai, its whole message history stored as JSON in one row after every turn and read back before
    the next."""

    UPSERT = (
        "INSERT INTO pydantic_ai_history (id, messages) VALUES ({p}, {p}) "
        "ON CONFLICT (id) DO UPDATE SET messages = excluded.messages"
    )
    SELECT = "SELECT messages FROM pydantic_ai_history WHERE id = {p}"

    def __init__(self, database: str, var: Path) -> None:
        self.database, self.var = database, var
        self.connection: Any = None
        self.agent: Any = None
        self.p = "?" if database == "sqlite" else "%s"

    def connect(self, base_url: str) -> None:
        from pydantic_ai import Agent
        from pydantic_ai.models.openai import OpenAIChatModel
        from pydantic_ai.providers.openai import OpenAIProvider

        model = OpenAIChatModel("m", provider=OpenAIProvider(base_url=base_url, api_key="x"))
        self.agent = Agent(model, instructions="You add numbers.", tools=[add])
        if self.database == "sqlite":
            self.connection = sqlite3.connect(self.var / "pydantic-ai.sqlite3")
        else:
            import psycopg

            self.connection = psycopg.connect(host=str(self.var / "postgres"), user=POSTGRES_USER, dbname="toolcalling")
        # all_messages_json() is bytes: stored as they are, read back as bytes.
        blob = "BLOB" if self.database == "sqlite" else "BYTEA"
        self.connection.execute(
            f"CREATE TABLE IF NOT EXISTS pydantic_ai_history (id TEXT PRIMARY KEY, messages {blob})"
        )
        self.connection.commit()

    def __call__(
        self, base_url: str, turns: int, around: Callable[[], AbstractContextManager[Any]] = nullcontext
    ) -> list[float]:
        """Seconds per turn; ``around``: what each turn runs in (``bench/floor_cost.py`` counts a turn's work there)."""
        from pydantic_ai.messages import ModelMessagesTypeAdapter

        if self.agent is None:
            self.connect(base_url)
        conversation = f"bench-{next(_conversations)}"
        times = []
        for _ in range(turns):
            with around():
                started = time.perf_counter()
                row = self.connection.execute(self.SELECT.format(p=self.p), (conversation,)).fetchone()
                self.connection.commit()  # psycopg opened a transaction for the read: end it, as a request would
                history = ModelMessagesTypeAdapter.validate_json(row[0]) if row else None
                result = self.agent.run_sync(QUESTION, message_history=history)
                self.connection.execute(self.UPSERT.format(p=self.p), (conversation, result.all_messages_json()))
                self.connection.commit()
                times.append(time.perf_counter() - started)
            assert result.output == ANSWER, result.output
        return times

    def close(self) -> None:
        if self.connection is not None:
            self.connection.close()


class OpenAIAgentsSession:
    """openai-agents with a session: ``SQLiteSession`` on SQLite, ``SQLAlchemySession`` on PostgreSQL."""

    def __init__(self, database: str, var: Path) -> None:
        self.database, self.var = database, var
        self.loop: asyncio.AbstractEventLoop | None = None
        self.engine: Any = None
        self.client: Any = None
        self.agent: Any = None

    def connect(self, base_url: str) -> None:
        from agents import Agent, OpenAIChatCompletionsModel, function_tool, set_tracing_disabled
        from openai import AsyncOpenAI

        set_tracing_disabled(True)
        # One loop for the whole run: the async engine's pooled connections belong to the loop they were made on.
        self.loop = asyncio.new_event_loop()
        self.client = AsyncOpenAI(base_url=base_url, api_key="x", max_retries=0)
        self.agent = Agent(
            name="bench",
            instructions="You add numbers.",
            tools=[function_tool(add)],
            model=OpenAIChatCompletionsModel(model="m", openai_client=self.client),
        )
        if self.database == "postgresql":
            from sqlalchemy.ext.asyncio import create_async_engine

            socket = self.var / "postgres"
            self.engine = create_async_engine(f"postgresql+psycopg://{POSTGRES_USER}@/toolcalling?host={socket}")
            self.loop.run_until_complete(self.session("bench-tables", create_tables=True).get_items())

    def session(self, session_id: str, *, create_tables: bool = False) -> Any:
        if self.database == "sqlite":
            from agents import SQLiteSession

            return SQLiteSession(session_id, self.var / "openai-agents.sqlite3")
        from agents.extensions.memory import SQLAlchemySession

        # The tables exist (made once in connect): a site would not check for them on every conversation.
        return SQLAlchemySession(session_id, engine=self.engine, create_tables=create_tables)

    def __call__(self, base_url: str, turns: int) -> list[float]:
        from agents import Runner

        if self.loop is None:
            self.connect(base_url)
        assert self.loop is not None
        session = self.session(f"bench-{next(_conversations)}")
        times = []
        try:
            for _ in range(turns):
                started = time.perf_counter()
                result = self.loop.run_until_complete(Runner.run(self.agent, QUESTION, session=session))
                times.append(time.perf_counter() - started)
                assert result.final_output == ANSWER, result.final_output
        finally:
            if self.database == "sqlite":
                session.close()
        return times

    def close(self) -> None:
        if self.loop is None:
            return
        self.loop.run_until_complete(self.client.close())
        if self.engine is not None:
            self.loop.run_until_complete(self.engine.dispose())
        self.loop.close()


class LangGraphCheckpointed:
    """LangGraph's tool-calling graph with a checkpointer on the database, one thread per conversation."""

    def __init__(self, database: str, var: Path) -> None:
        self.database, self.var = database, var
        self.connection: Any = None
        self.graph: Any = None

    def connect(self, base_url: str) -> None:
        from langchain_core.messages import SystemMessage
        from langchain_openai import ChatOpenAI
        from langgraph.graph import START, MessagesState, StateGraph
        from langgraph.prebuilt import ToolNode, tools_condition

        model = ChatOpenAI(model="m", base_url=base_url, api_key="x", max_retries=0).bind_tools([add])

        def chatbot(state: MessagesState) -> dict[str, Any]:
            return {"messages": [model.invoke([SystemMessage("You add numbers."), *state["messages"]])]}

        builder = StateGraph(MessagesState)
        builder.add_node("chatbot", chatbot)
        builder.add_node("tools", ToolNode([add]))
        builder.add_conditional_edges("chatbot", tools_condition)
        builder.add_edge("tools", "chatbot")
        builder.add_edge(START, "chatbot")
        checkpointer: Any
        if self.database == "sqlite":
            from langgraph.checkpoint.sqlite import SqliteSaver

            self.connection = sqlite3.connect(self.var / "langgraph.sqlite3", check_same_thread=False)
            checkpointer = SqliteSaver(self.connection)
        else:
            import psycopg
            from langgraph.checkpoint.postgres import PostgresSaver
            from psycopg.rows import dict_row

            self.connection = psycopg.connect(
                host=str(self.var / "postgres"),
                user=POSTGRES_USER,
                dbname="toolcalling",
                autocommit=True,
                prepare_threshold=0,
                row_factory=dict_row,
            )
            checkpointer = PostgresSaver(self.connection)
        checkpointer.setup()
        self.graph = builder.compile(checkpointer=checkpointer)

    def __call__(self, base_url: str, turns: int) -> list[float]:
        if self.graph is None:
            self.connect(base_url)
        config = {"configurable": {"thread_id": f"bench-{next(_conversations)}"}}
        times = []
        for _ in range(turns):
            started = time.perf_counter()
            state = self.graph.invoke({"messages": [{"role": "user", "content": QUESTION}]}, config)
            times.append(time.perf_counter() - started)
            assert state["messages"][-1].content == ANSWER, state["messages"][-1].content
        return times

    def close(self) -> None:
        if self.connection is not None:
            self.connection.close()


def persisting_peer_sides(databases: dict[str, str], var: Path) -> dict[str, Any]:
    """The persisting peers on each of ``databases`` (label: "sqlite" or "postgresql"), named by peer and label."""
    sides: dict[str, Any] = {}
    for label, database in databases.items():
        sides[f"openai-agents, {label}"] = OpenAIAgentsSession(database, var)
        sides[f"pydantic-ai, {label}"] = PydanticAIStored(database, var)
        sides[f"LangGraph, {label}"] = LangGraphCheckpointed(database, var)
    return sides
