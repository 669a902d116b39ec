"""Reading and writing a conversation's history, so every stored history is one the OpenAI API accepts.

A turn writes through a ``Ledger`` that holds the turn's claim (a token stored on the conversation when
it was claimed). Every write is a transaction that first bumps the conversation's ``updated_at`` *where
the conversation still carries that token and is running*: a turn that lost its claim (taken over after
going quiet, or the conversation deleted) writes nothing more, and the row lock that update takes orders
a late write and a takeover one after the other. A call is answered at most once: answers are conditional
updates of the call's status, and the database refuses a second tool message for one call id.

That update also reports a stop request (see ``_stop``), and each write stores the usage the turn counted.
"""

from __future__ import annotations

import datetime
import logging
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from django.db import transaction
from django.db.models import Prefetch
from django.utils import timezone
from django.utils.translation import gettext as _

from ..exceptions import TurnInterrupted
from ..model_apis import ModelReply, Usage
from ..models import Conversation, Message, ToolCall, UsageCounter
from ..toolkit import storable, storable_json, unique_call_ids
from ..usage import Meter
from . import _sql as sql

logger = logging.getLogger("toolcalling")

RUNNING = Conversation.Status.RUNNING
OPEN_CALL_STATUSES = (ToolCall.Status.RUNNING, ToolCall.Status.APPROVED)

# ``Message.model`` of an assistant message whose calls a client asked for directly (an MCP client), not a model.
CLIENT_PREFIX = "client:"


def claim(
    conversation: Conversation, *, from_statuses: Iterable[str], stale_after: float | None = None
) -> uuid.UUID | None:
    """Move the conversation to ``running`` if it is in one of ``from_statuses``; one winner only.

    Returns the winner's token (``None`` for the losers). With ``stale_after`` (seconds), a turn that has
    been ``running`` without any write for that long (its process died, or hangs) may be taken over too.
    """
    token = uuid.uuid4()
    values = {"status": RUNNING, "error": "", "turn_token": token, "updated_at": timezone.now()}
    values["stop_requested_at"] = None  # a turn taken over may have been asked to stop; this one was not
    statuses = list(from_statuses)
    updated = statuses and sql.update(
        Conversation, set=values, where={"id": conversation.pk}, where_in=("status", statuses)
    )
    if not updated and stale_after is not None:
        cutoff = timezone.now() - datetime.timedelta(seconds=stale_after)
        updated = Conversation.objects.filter(pk=conversation.pk, status=RUNNING, updated_at__lt=cutoff).update(
            **values
        )
    if not updated:
        return None
    conversation.status, conversation.error, conversation.turn_token = RUNNING, "", token
    return token


class Ledger:
    """The writes of one turn, each refused once the turn no longer holds its claim (``TurnInterrupted``)."""

    def __init__(self, conversation: Conversation, token: uuid.UUID | None = None, meter: Meter | None = None) -> None:
        self.conversation = conversation
        self.token = token
        self.meter = meter  # the turn's usage counts, stored with its writes
        self.ended: str | None = None  # the status a write already ended the turn with
        self.stopping = False  # the owner asked the turn to stop, as its last write (or check) found

    @contextmanager
    def write(
        self, *, usage: Usage | None = None, ending: str | None = None, error: str = "", durable: bool = True
    ) -> Iterator[None]:
        """A transaction in which this turn may write. The update that checks the claim also carries the
        heartbeat, the tokens of a reply (``usage``) and the turn's end (``ending``), in one statement. That update
        is also fenced by "no stop requested": only when it finds nothing does a second one tell a stop request
        (``stopping``) from a lost claim. Last, it stores the usage the ``meter`` counted since the last write.

        ``durable=False`` (a tool's result, tokens of a retried answer) lets the commit return before it is
        on disk, where the database allows: the turn's next durable write (its next answer with calls, or its
        end) carries it there before a tool runs again or the turn reports anything. An answer with calls is
        always durable before its tools run, so a crash can lose a result, never repeat a tool.
        """
        values: dict[str, Any] = {"updated_at": timezone.now()}
        tokens: dict[str, int] = {}
        if usage is not None and usage.total_tokens:
            tokens = {"prompt_tokens": usage.prompt_tokens, "completion_tokens": usage.completion_tokens,
                      "total_tokens": usage.total_tokens}  # fmt: skip
        if ending is not None:
            values.update(status=ending, error=storable(error), turn_token=None, stop_requested_at=None)
        held = {"id": self.conversation.pk, "turn_token": self.token, "status": RUNNING}
        with transaction.atomic():
            if not durable and ending is None:
                sql.relax_durability()
            unstopped = {**held, "stop_requested_at": None}
            if self.stopping or not sql.update(Conversation, set=values, add=tokens, where=unstopped):
                if not sql.update(Conversation, set=values, add=tokens, where=held):
                    logger.warning("a write of a turn of conversation %s was refused: the turn lost its claim",
                                   self.conversation.pk)  # fmt: skip
                    raise TurnInterrupted(status=self._status_now())
                self.stopping = True
            yield
            # Last, so the shared rows stay locked only until the commit; without limits, once, at the turn's end.
            if self.meter is not None and self.meter.pending and (self.meter.urgent or ending is not None):
                self.count_usage()
        conv = self.conversation
        if usage is not None:
            conv.prompt_tokens += usage.prompt_tokens
            conv.completion_tokens += usage.completion_tokens
            conv.total_tokens += usage.total_tokens
        if ending is not None:
            conv.status, conv.error, conv.turn_token, self.ended = ending, error, None, ending

    def count_usage(self) -> None:
        """Add what the turn used since its last write to its usage counters, in the caller's transaction."""
        assert self.meter is not None
        counts, now = self.meter.pending, timezone.now()
        added = {"tokens": counts.tokens, "turns": counts.turns, "tool_calls": counts.tool_calls}
        ids = self.meter.row_ids(now)
        if sql.update(UsageCounter, set={"updated_at": now}, add=added, where={}, where_in=("id", ids)) < len(ids):
            # A remembered row is gone (a flushed database) or not committed yet (another turn is making it):
            # take back what this update added to the rows it found, and count in the rows as they are now.
            taken_back = {quantity: -amount for quantity, amount in added.items()}
            sql.update(UsageCounter, set={"updated_at": now}, add=taken_back, where={}, where_in=("id", ids))
            fresh = self.meter.row_ids(now, fresh=True)
            sql.update(UsageCounter, set={"updated_at": now}, add=added, where={}, where_in=("id", fresh))
        self.meter.stored(counts)

    def check_stop(self) -> bool:
        """Whether the owner asked this turn to stop, read now (one query); ``TurnInterrupted`` if the claim is gone."""
        if not self.stopping:
            held = {"id": self.conversation.pk, "turn_token": self.token, "status": RUNNING}
            found = sql.select(Conversation, ["stop_requested_at"], where=held, limit=1)
            if not found:
                raise TurnInterrupted(status=self._status_now())
            self.stopping = found[0][0] is not None
        return self.stopping

    def add_message(self, role: str, content: str, *, ending: str | None = None) -> Message:
        """Store a message; with ``ending``, the turn's end (that status) in the same transaction."""
        with self.write(ending=ending):
            return add_message(self.conversation, role, content)

    def add_reply(
        self, reply: ModelReply, *, data: Any = None, ending: str | None = None
    ) -> tuple[Message, list[ToolCall]]:
        """Store a model answer and its requested calls, and add its tokens to the conversation's totals.

        ``data`` is the structured output parsed from the answer, when the turn asked for one. Call ids are
        made safe here: a missing, overlong or repeated id gets a new one, so each call pairs with one answer.
        """
        usage = reply.usage
        with self.write(usage=usage, ending=ending):
            message = Message(
                conversation=self.conversation,
                role=Message.Role.ASSISTANT,
                content=storable(reply.content or ""),
                data=storable_json(data),
                model=storable(reply.model)[:200],
                prompt_tokens=usage.prompt_tokens,
                completion_tokens=usage.completion_tokens,
                total_tokens=usage.total_tokens,
            )
            sql.insert([message])
            calls: list[ToolCall] = []
            if reply.tool_calls:
                requested = [call.id for call in reply.tool_calls if call.id]
                taken = sql.select(ToolCall, ["call_id"], where={"conversation": self.conversation.pk},
                                   where_in=("call_id", requested)) if requested else []  # fmt: skip
                ids = unique_call_ids([call.id for call in reply.tool_calls], [row[0] for row in taken])
                calls = [
                    ToolCall(
                        conversation=self.conversation,
                        message=message,
                        index=index,
                        call_id=call_id,
                        name=storable(call.name)[:64],
                        raw_arguments=storable(call.arguments),
                        status=ToolCall.Status.RUNNING,
                    )
                    for index, (call, call_id) in enumerate(zip(reply.tool_calls, ids, strict=True))
                ]
                sql.insert(calls)
        message._prefetched_objects_cache = {"tool_calls": calls}  # type: ignore[attr-defined]
        return message, calls

    def set_title_if_empty(self, title: str) -> None:
        """Name the conversation after its first message, unless someone named it meanwhile."""
        if not self.conversation.title:
            title = storable(title)[:200]
            sql.update(Conversation, set={"title": title}, where={"id": self.conversation.pk, "title": ""})
            self.conversation.title = title

    def add_usage(self, usage: Usage) -> None:
        with self.write(usage=usage, durable=False):
            pass

    def wait_for_approval(self, call: ToolCall) -> None:
        """Store a validated call as ``awaiting_approval``."""
        call.requires_approval = True
        call.status = ToolCall.Status.AWAITING_APPROVAL
        with self.write():
            ToolCall.objects.filter(pk=call.pk, status=ToolCall.Status.RUNNING).update(
                arguments=storable_json(call.arguments), extras=storable_json(call.extras),
                requires_approval=True, approver=call.approver, status=call.status,
            )  # fmt: skip

    def answer_call(
        self, call: ToolCall, *, status: str, result: str, error: str = "", waiting: bool = False
    ) -> Message:
        statuses = [*OPEN_CALL_STATUSES, ToolCall.Status.AWAITING_APPROVAL] if waiting else OPEN_CALL_STATUSES
        with self.write(durable=False):
            message = answer_call_if(call, from_status=statuses, status=status, result=result, error=error)
            if message is None:
                raise TurnInterrupted(_("The call %(id)s was answered by someone else.") % {"id": call.call_id})
            return message

    def close_open_calls(
        self, reason: str, *, started: Iterable[int] | None = (), waiting: bool = False
    ) -> list[Message]:
        with self.write(durable=False):  # the turn's end follows
            return close_open_calls(self.conversation, reason, started=started, waiting=waiting)

    def set_status(self, status: str, error: str = "") -> None:
        """Store how the turn ended; the claim ends with it. Nothing to do if a write already ended it so."""
        if self.ended == status and not error:
            return
        with self.write(ending=status, error=error):
            pass

    def _status_now(self) -> str | None:
        return Conversation.objects.filter(pk=self.conversation.pk).values_list("status", flat=True).first()


# Writes that belong to no turn (approvals, sweeps) and the shared pieces ------------------------------


def set_status(conversation: Conversation, status: str, error: str = "") -> None:
    """Set a conversation's status outside any turn (a background turn that could not start, say)."""
    conversation.status, conversation.error = status, error
    Conversation.objects.filter(pk=conversation.pk).update(
        status=status, error=storable(error), turn_token=None, stop_requested_at=None, updated_at=timezone.now()
    )


def load_messages(conversation: Conversation) -> list[Message]:
    """The stored history in order, with each assistant message's calls: two queries, whatever its length."""
    calls = Prefetch("tool_calls", queryset=ToolCall.objects.order_by("index"))
    return list(conversation.messages.order_by("id").prefetch_related(calls))


def asked_by_client(conversation: Conversation) -> bool:
    """Whether the latest calls of the conversation were asked for by a client directly (no model waits for
    their results)."""
    latest = (
        Message.objects.filter(conversation_id=conversation.pk, role=Message.Role.ASSISTANT, tool_calls__isnull=False)
        .order_by("-id")
        .values_list("model", flat=True)[:1]
    )
    return any(model.startswith(CLIENT_PREFIX) for model in latest)


def history_items(
    conversation: Conversation, *, before: int | None = None, limit: int | None = None
) -> list[tuple[int, dict[str, Any]]]:
    """Stored messages as ``(id, Chat Completions message)``, oldest first: all of them, or with ``limit`` the
    ``limit`` newest before the id ``before``. Read as plain values, not model instances: a turn reads its
    history on every message, and long histories must stay cheap."""
    items: list[tuple[int, dict[str, Any]]] = []
    for message_id, role, content, tool_call_id, call_id, name, arguments in sql.history(
        conversation.pk, before=before, limit=limit
    ):
        if items and items[-1][0] == message_id:  # another call of the same assistant message
            item = items[-1][1]
        elif role == Message.Role.TOOL:
            item = {"role": "tool", "tool_call_id": tool_call_id, "content": content}
            items.append((message_id, item))
        elif role == Message.Role.ASSISTANT:
            item = {"role": "assistant", "content": content or None}
            items.append((message_id, item))
        else:
            item = {"role": role, "content": content}
            items.append((message_id, item))
        if call_id is not None:
            call = {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments or "{}"}}
            item.setdefault("tool_calls", []).append(call)
        elif role == Message.Role.ASSISTANT and item["content"] is None:
            item["content"] = ""
    return items


def to_openai(messages: Iterable[Message]) -> list[dict[str, Any]]:
    """Stored messages as Chat Completions messages."""
    out: list[dict[str, Any]] = []
    for message in messages:
        if message.role == Message.Role.TOOL:
            out.append({"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content})
        elif message.role == Message.Role.ASSISTANT:
            item: dict[str, Any] = {"role": "assistant", "content": message.content or None}
            calls = list(message.tool_calls.all())
            if calls:
                item["tool_calls"] = [c.as_openai() for c in calls]
            elif item["content"] is None:
                item["content"] = ""
            out.append(item)
        else:
            out.append({"role": message.role, "content": message.content})
    return out


def add_message(conversation: Conversation, role: str, content: str, **fields: Any) -> Message:
    message = Message(conversation=conversation, role=role, content=storable(content), **fields)
    sql.insert([message])
    return _without_calls(message)


def _without_calls(message: Message) -> Message:
    """Mark a new message as having no tool calls, so reading them later costs no query."""
    message._prefetched_objects_cache = {"tool_calls": ToolCall.objects.none()}  # type: ignore[attr-defined]
    return message


def answer_call_if(
    call: ToolCall,
    *,
    from_status: str | Iterable[str],
    status: str,
    result: str,
    error: str = "",
    **fields: Any,
) -> Message | None:
    """Answer the call only if it is still in ``from_status``; ``None`` when another process got there first.

    The call's outcome and the tool message that tells the model are stored together. ``fields`` (such as
    ``decided_by``) are written by the same conditional ``UPDATE ... WHERE status = from_status``, which is
    what makes a decision or a result count once: of two racing writers exactly one updates the row.
    """
    statuses = [from_status] if isinstance(from_status, str) else list(from_status)
    now = timezone.now()
    # At most the column's maximum on PostgreSQL and MySQL (2**31 - 1 ms, about 24.8 days): a run the sweep
    # fails long after its worker died must still be answered.
    duration = min(2**31 - 1, max(0, int((now - call.started_at).total_seconds() * 1000))) if call.started_at else None
    result, error = storable(result), storable(error)
    values = {
        "status": status,
        "result": result,
        "error": error,
        "finished_at": now,
        "duration_ms": duration,
        "arguments": storable_json(call.arguments),
        "extras": storable_json(call.extras),
        "requires_approval": call.requires_approval,
        "started_at": call.started_at,
        **{name: storable(value) if isinstance(value, str) else value for name, value in fields.items()},
    }
    with transaction.atomic(savepoint=False):  # within a turn's write, part of its transaction
        if not sql.update(ToolCall, set=values, where={"id": call.pk}, where_in=("status", statuses)):
            return None
        for name, value in values.items():
            setattr(call, name, value)
        message = Message(
            conversation_id=call.conversation_id, role=Message.Role.TOOL, content=result, tool_call_id=call.call_id
        )
        sql.insert([message])
    return _without_calls(message)


def close_open_calls(
    conversation: Conversation, reason: str, *, started: Iterable[int] | None = (), waiting: bool = False
) -> list[Message]:
    """Answer every call that was asked for but never answered, so the stored history stays valid.

    A call gets its final status and its tool message together, so the open calls are exactly those still
    ``running`` or ``approved``; waiting ones keep waiting, unless ``waiting`` (a stopped turn withdraws them
    too). A running call whose tool had started (``started_at``, or its id in ``started``; ``started=None``:
    nobody knows, as after a takeover) may have done its work: it is answered ``failed`` with that said,
    never "not run".
    """
    known = set(started) if started is not None else None
    statuses = [*OPEN_CALL_STATUSES, ToolCall.Status.AWAITING_APPROVAL] if waiting else OPEN_CALL_STATUSES
    open_calls = conversation.tool_calls.filter(status__in=statuses).order_by("message_id", "index")
    answers = []
    for call in open_calls:
        may_have_run = call.status == ToolCall.Status.RUNNING and (
            known is None or call.started_at is not None or call.pk in known
        )
        if may_have_run:
            status = ToolCall.Status.FAILED
            text = f"Error: {reason} The tool may have run; whether it took effect is unknown."
        else:
            status, text = ToolCall.Status.CANCELLED, f"Not run: {reason}"
        message = answer_call_if(call, from_status=statuses, status=status, result=text, error=reason)
        if message is not None:
            answers.append(message)
    return answers
