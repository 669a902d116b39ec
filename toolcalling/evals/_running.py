"""Running one case: its turns through ``Assistant.run`` and the site's real tools, gated calls decided in this
process, everything inside one transaction that is rolled back when the case is read.

A tool that writes through a connection of its own (another database alias, a raw ``psycopg`` connection,
an HTTP call to another service) is outside that transaction: its effects stay. So do e-mails, files and
cache entries. Point such tools at test services while evaluating.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.db import connections, transaction
from django.utils import timezone

from .. import approval
from ..assistant import Assistant
from ..engine import continue_turn
from ..exceptions import ImproperlyDefined, TurnError
from ..models import Conversation, Message, ToolCall
from ..storage import answer_call_if, with_retries, write_db
from ..toolkit import assistants
from ._cases import EvalInputs, ObservedCall, Transcript

EVAL_APPROVER = "toolcalling-eval-approver"

# SQLite takes one writer at a time: cases run one after the other there, whatever the concurrency.
_sqlite_lock = threading.Lock()


def run_case(inputs: EvalInputs, *, assistant_id: str | None = None) -> Transcript:
    """Run a case's messages as its user and return what they left; the database is as it was afterwards."""
    chosen = inputs.assistant or assistant_id
    if not chosen:
        raise ImproperlyDefined("The case names no assistant: give one in the case or with --assistant.")
    db = write_db()
    serial = _sqlite_lock if connections[db].vendor == "sqlite" else None
    try:
        if serial is not None:
            serial.acquire()

        def rolled_back() -> Transcript:
            with transaction.atomic(using=db):
                transcript = _run_turns(inputs, Assistant.get(chosen), db)
                transaction.set_rollback(True, using=db)
            return transcript

        # A case is one transaction, rolled back at its end, so cases at once can meet in a deadlock (MariaDB's
        # locks on their user's rows): nothing of it stays, and the whole case is tried again.
        return with_retries(rolled_back, db)
    finally:
        if serial is not None:
            serial.release()
        if threading.current_thread() is not threading.main_thread():
            connections.close_all()  # this thread's connections only: the next case may run on another thread


def _run_turns(inputs: EvalInputs, assistant: Assistant, db: str) -> Transcript:
    if inputs.fixtures:
        call_command("loaddata", *inputs.fixtures, database=db, verbosity=0)
    user = _user(inputs.user)
    existing = set(Conversation.objects.filter(user=user).values_list("pk", flat=True))
    conversation: Conversation | None = None
    output = None
    error = ""
    for content in inputs.messages:
        try:
            result = assistant.run(user, content, conversation)
        except TurnError as exc:
            error = str(exc)
            if conversation is None:  # the first turn failed: the conversation it made is the user's new one
                made = Conversation.objects.filter(user=user, assistant_id=str(assistant.id)).exclude(pk__in=existing)
                conversation = made.order_by("-created_at").first()
            break
        conversation = result.conversation
        output = result.output
        error = _decide_waiting(inputs, conversation, db)
        if error:
            break
    if conversation is None:
        return Transcript(error=error, status=Conversation.Status.FAILED)
    return _transcript(conversation, output.model_dump(mode="json") if output is not None else None, error)


def _decide_waiting(inputs: EvalInputs, conversation: Conversation, db: str) -> str:
    """Decide the waiting calls as the case says, run the approved ones here, as an eager worker would, then
    continue the conversation; repeated while the model asks for more gated calls. Only ``approve`` runs a
    tool: ``cancel`` is the user's cancel of the waiting calls (the conversation is idle, no model asked), and
    ``expire`` answers the call as expired, as the sweep would."""
    while True:
        conversation.refresh_from_db()
        if conversation.status != Conversation.Status.AWAITING_APPROVAL:
            return ""
        waiting = list(conversation.tool_calls.filter(status=ToolCall.Status.AWAITING_APPROVAL).order_by("id"))
        decided = [call for call in waiting if inputs.decisions.get(call.name, "wait") != "wait"]
        if not decided:
            return ""  # the case leaves them waiting: that is what it checks
        cancelling = False
        for call in decided:
            decision = inputs.decisions[call.name]
            if decision == "cancel":
                cancelling = True  # after the others: the user's cancel withdraws every call still waiting
                continue
            decider = conversation.user if call.approver == ToolCall.Approver.USER else _approver(inputs)
            with _no_queued_tasks(db):
                if decision == "approve":
                    approval.approve(call, decider)
                    approval.run(call.pk)
                elif decision == "reject":
                    approval.reject(call, decider, inputs.reject_reason)
                else:
                    _expire(call)
        if cancelling:
            with _no_queued_tasks(db):
                approval.cancel_waiting(conversation, conversation.user)
            return ""
        if approval.waiting_calls().filter(conversation=conversation).exists():
            continue
        with _no_queued_tasks(db):
            continue_turn(str(conversation.pk))
        conversation.refresh_from_db()
        if conversation.status == Conversation.Status.FAILED:
            return conversation.error or "the conversation failed"


def _expire(call: ToolCall) -> None:
    """Answer a waiting call as expired, as ``approval.expire`` does for the calls past ``APPROVAL_TIMEOUT``:
    that sweep takes every such call of the site, so the case answers its own call alone."""
    who = "the user did not confirm it" if call.approver == ToolCall.Approver.USER else "no staff member decided"
    answer_call_if(
        call,
        from_status=ToolCall.Status.AWAITING_APPROVAL,
        status=ToolCall.Status.EXPIRED,
        result=f"Not run: {who} in time, so the request expired.",
        decided_at=timezone.now(),
        decision_reason="Expired.",
    )


@contextmanager
def _no_queued_tasks(db: str) -> Iterator[None]:
    """Drop the tasks a decision queues for after commit (the run, the continuation): this case runs them
    itself, and its transaction never commits."""
    connection = transaction.get_connection(db)
    mark = len(connection.run_on_commit)
    try:
        yield
    finally:
        del connection.run_on_commit[mark:]


def _user(username: str) -> Any:
    user_model = get_user_model()
    try:
        return user_model._default_manager.get_by_natural_key(username)
    except user_model.DoesNotExist:
        raise ImproperlyDefined(f"The case runs as {username!r}, and there is no such user.")


def _approver(inputs: EvalInputs) -> Any:
    """The case's approver, else a superuser made inside the case's transaction (so rolled back with it)."""
    if inputs.approver:
        return _user(inputs.approver)
    user_model = get_user_model()
    found = user_model._default_manager.filter(**{user_model.USERNAME_FIELD: EVAL_APPROVER}).first()
    if found is not None:
        return found
    user = user_model(**{user_model.USERNAME_FIELD: EVAL_APPROVER, "is_staff": True, "is_superuser": True})
    user.set_unusable_password()
    user.save()
    return user


def _transcript(conversation: Conversation, output: dict[str, Any] | None, error: str) -> Transcript:
    conversation.refresh_from_db()
    messages = list(conversation.messages.order_by("id").prefetch_related("tool_calls"))
    last_user = max((i for i, m in enumerate(messages) if m.role == Message.Role.USER), default=-1)
    reply = ""
    for message in messages[last_user + 1 :]:
        if message.role == Message.Role.ASSISTANT and not message.tool_calls.all():
            reply = message.content
    calls = conversation.tool_calls.order_by("id")
    cost = getattr(conversation, "cost", None)  # priced sites store it; a plain site has no cost to report
    return Transcript(
        reply=reply,
        output=output,
        tool_calls=[
            ObservedCall(name=c.name, arguments=c.arguments or {}, status=c.status, result=c.result) for c in calls
        ],  # fmt: skip
        turns=sum(m.role == Message.Role.ASSISTANT for m in messages),
        prompt_tokens=conversation.prompt_tokens,
        completion_tokens=conversation.completion_tokens,
        total_tokens=conversation.total_tokens,
        cost=None if cost is None else str(cost),
        status=conversation.status,
        error=error or (conversation.error if conversation.status == Conversation.Status.FAILED else ""),
    )


@contextmanager
def assistant_overrides(assistant_id: str, *, model: str | None = None, api: str | None = None) -> Iterator[None]:
    """Run the assistant with another model or model API for a while (``--model``, ``--api``): set on its class,
    since approved calls and continuations look the assistant up again by id."""
    cls = assistants.get(assistant_id)
    changes = {name: value for name, value in (("model", model), ("api", api)) if value is not None}
    saved = {name: cls.__dict__[name] for name in changes if name in cls.__dict__}
    for name, value in changes.items():
        setattr(cls, name, value)
    try:
        yield
    finally:
        for name in changes:
            if name in saved:
                setattr(cls, name, saved[name])
            else:
                delattr(cls, name)
