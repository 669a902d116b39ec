"""The writes a turn, an approval and a sweep share: messages, a call's conditional changes, a conversation's status.

Every write is the ORM's, on the database the site's router gives for writes, and a site's ``post_save``
receivers hear of each message and call: new ones are saved (``created=True``); a call's later changes are
conditional ``update()``s, which is what makes each happen once, and after one succeeds ``post_save`` is sent
for the call with ``created=False`` and the ``update_fields`` it wrote.
"""

from __future__ import annotations

import datetime
import logging
import random
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

from django.db import DatabaseError, connections, router, transaction
from django.db.models import Case, F, Model, Value, When
from django.db.models.signals import post_save, pre_save
from django.utils import timezone

from ..models import Conversation, Message, ToolCall
from ..toolkit import storable, storable_json

RUNNING = Conversation.Status.RUNNING
OPEN_CALL_STATUSES = (ToolCall.Status.RUNNING, ToolCall.Status.APPROVED)
ATTEMPTS = 5  # of a transaction the database rolled back for a deadlock or a lock it could not get
# PostgreSQL's deadlock_detected and serialization_failure; MariaDB's deadlock and lock wait timeout.
TRANSIENT_SQLSTATES = ("40P01", "40001")
TRANSIENT_ERRNOS = (1213, 1205)

logger = logging.getLogger("toolcalling")
T = TypeVar("T")


def write_db(conversation: Conversation | None = None) -> str:
    """The database alias the site's router gives for writes of ``conversation`` (a transaction opens there)."""
    if conversation is None:
        return router.db_for_write(Conversation)
    return router.db_for_write(Conversation, instance=conversation)


def relax_durability(using: str | None = None) -> None:
    """Let the current transaction's commit return before it reaches the disk (PostgreSQL's
    ``synchronous_commit = off`` for this transaction; other databases keep their own setting).

    For writes that a later write of the same turn makes durable anyway: PostgreSQL writes its log in
    order, so the next commit that waits for the disk brings every earlier one with it. A crash of the
    database server in between loses them, never leaves them half written. A setting of the session,
    not a write of data: it runs on the connection of the write database (``using``, else the router's).
    """
    connection = connections[using or write_db()]
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL synchronous_commit TO OFF")


def is_transient(exc: BaseException) -> bool:
    """Whether the database rolled the transaction back only because of other transactions at the same time
    (a deadlock, a serialization failure, a lock wait that timed out, SQLite's "database is locked"): trying
    the same transaction again may succeed."""
    if not isinstance(exc, DatabaseError):
        return False
    cause = exc.__cause__
    if getattr(cause, "sqlstate", None) in TRANSIENT_SQLSTATES:
        return True
    args = getattr(cause, "args", ())
    if args and args[0] in TRANSIENT_ERRNOS:
        return True
    return "database is locked" in str(exc)


def with_retries(attempt: Callable[[], T], using: str) -> T:
    """Run ``attempt``, a whole transaction on ``using``, again (a few times) when the database rolled it back
    for a transient reason (``is_transient``). Inside a caller's transaction nothing can be tried again (the
    caller's transaction is what was rolled back): the error goes to the caller."""
    for tries in range(1, ATTEMPTS + 1):
        try:
            return attempt()
        except DatabaseError as exc:
            if tries == ATTEMPTS or not is_transient(exc) or connections[using].in_atomic_block:
                raise
            logger.warning("a transaction was rolled back (%s); trying it again (%d of %d)", exc, tries, ATTEMPTS)
            # A random wait, growing: transactions that met in a deadlock do not meet again at once.
            time.sleep(random.uniform(0, 0.01 * 2**tries))  # noqa: S311 (not a secret)
    raise AssertionError("unreachable")  # the last attempt returned or raised


def send_post_save(instance: Model, update_fields: Iterable[str], using: str) -> None:
    """Tell ``post_save`` receivers of a change an ``update()`` made to ``instance`` (it sends no signal itself)."""
    post_save.send(
        sender=type(instance),
        instance=instance,
        created=False,
        update_fields=frozenset(update_fields),
        raw=False,
        using=using,
    )


def save_together(rows: Sequence[Model]) -> None:
    """Store new rows of one model as ``save()`` stores each, in one ``INSERT`` where that can be done: on the
    database the site's router gives for writes of each, with ``pre_save`` and ``post_save`` sent for each
    (``created=True``), each row given its id. Several rows go in one statement when the router sends them all to
    one database whose ``INSERT`` returns the new ids; otherwise (one row, or MySQL) each is saved by itself.

    Receivers hear of the rows in their order, and all of them before the statement (``pre_save``, where a
    receiver may still change a row) or after it (``post_save``), rather than one row at a time."""
    if not rows:
        return
    model = type(rows[0])
    databases = {router.db_for_write(model, instance=row) for row in rows}
    using = databases.pop() if len(databases) == 1 else None
    if len(rows) == 1 or using is None or not connections[using].features.can_return_rows_from_bulk_insert:
        for row in rows:
            row.save()
        return
    for row in rows:
        pre_save.send(sender=model, instance=row, raw=False, using=using, update_fields=None)
    model._base_manager.using(using).bulk_create(rows)
    for row in rows:
        post_save.send(sender=model, instance=row, created=True, update_fields=None, raw=False, using=using)


def update_call_if(call: ToolCall, from_status: str | Iterable[str], /, **values: Any) -> bool:
    """Write ``values`` to the call only if it is still in ``from_status``; False when another process got there
    first. One conditional ``UPDATE``, so of two racing writers exactly one changes the row; the winner's
    ``call`` takes the values and ``post_save`` is sent for it."""
    statuses = [from_status] if isinstance(from_status, str) else list(from_status)
    using = router.db_for_write(ToolCall, instance=call)
    if not statuses or not ToolCall.objects.using(using).filter(pk=call.pk, status__in=statuses).update(**values):
        return False
    for name, value in values.items():
        setattr(call, name, value)
    send_post_save(call, values, using)
    return True


def claim(
    conversation: Conversation,
    *,
    from_statuses: Iterable[str],
    stale_after: float | None = None,
    title: str | None = None,
) -> uuid.UUID | None:
    """Move the conversation to ``running`` if it is in one of ``from_statuses``; one winner only.

    Returns the winner's token (``None`` for the losers). With ``stale_after`` (seconds), a turn that has
    been ``running`` without any write for that long (its process died, or hangs) may be taken over too.
    ``title`` names a conversation that has no title yet, in the same statement; one this process read with a
    title is named already, and its title is left as the row has it.
    """
    token = uuid.uuid4()
    values: dict[str, Any] = {"status": RUNNING, "error": "", "turn_token": token, "updated_at": timezone.now()}
    values["stop_requested_at"] = None  # a turn taken over may have been asked to stop; this one was not
    if title is not None and not conversation.title:
        # Unless someone named it meanwhile: decided by the row, not by what this process read.
        values["title"] = Case(When(title="", then=Value(storable(title)[:200])), default=F("title"))
    statuses = list(from_statuses)
    conversations = Conversation.objects.using(write_db(conversation))
    updated = statuses and conversations.filter(pk=conversation.pk, status__in=statuses).update(**values)
    if not updated and stale_after is not None:
        cutoff = timezone.now() - datetime.timedelta(seconds=stale_after)
        stale = conversations.filter(pk=conversation.pk, status=RUNNING, updated_at__lt=cutoff)
        updated = stale.update(**values)
    if not updated:
        return None
    conversation.status, conversation.error, conversation.turn_token = RUNNING, "", token
    if title is not None and not conversation.title:
        conversation.title = storable(title)[:200]
    return token


def claim_new(conversation: Conversation, *, title: str = "") -> uuid.UUID:
    """Store a conversation nobody else can know yet already claimed (``running``, with its token and title):
    one ``INSERT`` in the turn's first transaction instead of an ``INSERT`` and the claim's ``UPDATE``."""
    token = uuid.uuid4()
    conversation.status, conversation.error, conversation.turn_token = RUNNING, "", token
    conversation.title = conversation.title or storable(title)[:200]
    conversation.updated_at = timezone.now()
    conversation.save(force_insert=True, using=write_db(conversation))
    return token


def set_status(conversation: Conversation, status: str, error: str = "") -> None:
    """Set a conversation's status outside any turn (a background turn that could not start, say)."""
    conversation.status, conversation.error = status, error
    Conversation.objects.using(write_db(conversation)).filter(pk=conversation.pk).update(
        status=status, error=storable(error), turn_token=None, stop_requested_at=None, updated_at=timezone.now()
    )


def add_message(conversation: Conversation, role: str, content: str, **fields: Any) -> Message:
    message = Message(conversation=conversation, role=role, content=storable(content), **fields)
    message.save()
    return without_calls(message)


def without_calls(message: Message) -> Message:
    """Mark a new message as having no tool calls, so reading them later costs no query."""
    return message.has_none("tool_calls")


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
    ``decided_by``) are written by the same conditional ``UPDATE ... WHERE status IN from_status``, which is
    what makes a decision or a result count once: of two racing writers exactly one updates the row.
    """
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
    # Within a turn's write, part of its transaction.
    with transaction.atomic(using=router.db_for_write(ToolCall, instance=call), savepoint=False):
        if not update_call_if(call, from_status, **values):
            return None
        message = Message(
            conversation_id=call.conversation_id,
            role=Message.Role.TOOL,
            content=result,
            tool_call_id=call.call_id,
            is_error=status == ToolCall.Status.FAILED,
        )
        message.save(using=router.db_for_write(Message, instance=call))
    return without_calls(message)


def close_open_calls(
    conversation: Conversation, reason: str, *, started: Iterable[int] | None = (), waiting: bool = False
) -> list[Message]:
    """Answer every call that was asked for but never answered, so the stored history stays valid.

    A call gets its final status and its tool message together, so the open calls are exactly those still
    ``running`` or ``approved``, and those whose outcome is unknown (a turn that fails or is taken over cannot
    leave them waiting for a person: the next request would carry a call without its answer); waiting ones keep
    waiting, unless ``waiting`` (a stopped turn withdraws them too). A running call whose tool had started
    (``started_at``, or its id in ``started``; ``started=None``: nobody knows, as after a takeover), or whose
    outcome is unknown, may have done its work: it is answered ``failed`` with that said, never "not run". The
    open calls are read where they are written: what is read decides what is written.
    """
    known = set(started) if started is not None else None
    unknown = ToolCall.Status.OUTCOME_UNKNOWN
    statuses = [*OPEN_CALL_STATUSES, unknown, *([ToolCall.Status.AWAITING_APPROVAL] if waiting else [])]
    open_calls = (
        ToolCall.objects.using(router.db_for_write(ToolCall, instance=conversation))
        .filter(conversation_id=conversation.pk, status__in=statuses)
        .order_by("message_id", "index")
    )
    answers = []
    for call in open_calls:
        started_here = known is None or call.started_at is not None or call.pk in known
        may_have_run = call.status == unknown or (call.status == ToolCall.Status.RUNNING and started_here)
        if may_have_run:
            status = ToolCall.Status.FAILED
            text = f"Error: {reason} The tool may have run; whether it took effect is unknown."
        else:
            status, text = ToolCall.Status.CANCELLED, f"Not run: {reason}"
        message = answer_call_if(call, from_status=statuses, status=status, result=text, error=reason)
        if message is not None:
            answers.append(message)
    return answers
