"""A turn's usage limits and counters: checked before the turn calls the model, added to after it did.

The counters are aggregate rows, one per scope, key and calendar period (``UsageCounter``). Adding to them is
an ``update(tokens=Increment("tokens", n))`` of every row the usage counts in, so turns in web and worker
processes count into the same rows, and a check reads a few rows, never the messages.
"""

from __future__ import annotations

import datetime
import hashlib
import math
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from django.db import connections, router, transaction
from django.db.models import F, QuerySet
from django.utils import formats, timezone
from django.utils.timesince import timeuntil
from django.utils.translation import gettext as _
from django.utils.translation import pgettext

from ..conf import toolcalling_settings
from ..exceptions import UnpricedModel, UsageLimitExceeded
from ._costs import Pricing, capped
from ._increment import Increment
from ._limits import UsageLimit, parse_limits, shown, site_limits, window

if TYPE_CHECKING:
    from ..models import UsageCounter
    from ..toolkit import AssistantLike, ToolContext

# Kept for every turn, limits or not, so the admin can show usage per user and per assistant.
ALWAYS_COUNTED = (("user", "day"), ("user", "month"), ("assistant", "day"), ("assistant", "month"))
MAX_KEY_LENGTH = 200


@dataclass(frozen=True)
class Counts:
    """Amounts counted together."""

    tokens: int = 0
    turns: int = 0
    tool_calls: int = 0
    cost: Decimal = Decimal(0)
    """What the priced answers cost (in ``CURRENCY``)."""
    unpriced: int = 0
    """Answers whose model has no price, or whose usage is unknown: their cost is unknown, never zero."""
    unknown: int = 0
    """Answers whose endpoint reported no usage or a malformed one (see ``UNKNOWN_USAGE``)."""

    def __bool__(self) -> bool:
        return bool(self.tokens or self.turns or self.tool_calls or self.cost or self.unpriced or self.unknown)

    def __add__(self, other: Counts) -> Counts:
        return Counts(*(getattr(self, name) + getattr(other, name) for name in AMOUNTS))

    def __sub__(self, other: Counts) -> Counts:
        return Counts(*(getattr(self, name) - getattr(other, name) for name in AMOUNTS))

    def increments(self) -> dict[str, Any]:
        """Increments of a counter row by the amounts that are not zero (a cost stops at ``MAX_COST``)."""
        found: dict[str, Any] = {
            column(name): Increment(column(name), amount) for name in COUNTS if (amount := getattr(self, name))
        }
        if self.cost:
            found["cost"] = capped(F("cost") + self.cost)
        return found


AMOUNTS = ("tokens", "turns", "tool_calls", "cost", "unpriced", "unknown")
COUNTS = tuple(name for name in AMOUNTS if name != "cost")  # the whole numbers
COLUMNS = {"unpriced": "unpriced_replies", "unknown": "unknown_usage"}  # amounts whose column has another name
# The quantities an answer of unknown usage leaves unknown: a limit of them cannot be checked while one is counted
# in its period, under UNKNOWN_USAGE = "stop".
UNKNOWN_QUANTITIES = ("tokens", "cost")


def column(amount: str) -> str:
    return COLUMNS.get(amount, amount)


@dataclass(frozen=True)
class Counted:
    """A counter row without its period start: what is counted for whom, per which period."""

    scope: str
    key: str
    period: str
    user_id: Any = None

    def row(self, now: datetime.datetime) -> tuple[str, str, str, datetime.datetime]:
        return self.scope, self.key, self.period, window(self.period, now)[0]


class Meter:
    """The limits that apply to one user's turns with one assistant, with their scope keys resolved."""

    def __init__(
        self, limits: Iterable[tuple[UsageLimit, str]], counted: Iterable[Counted], unpriced_model: str = ""
    ) -> None:
        self.limits = list(limits)
        self.counted = list(dict.fromkeys(counted))
        self.pending = Counts()  # counted, not yet stored (see ``add`` and ``flush``)
        # A model with no price under a cost limit: its turns are refused, never counted as free (see ``check``).
        self.unpriced_model = unpriced_model

    @classmethod
    def build(cls, assistant: AssistantLike, ctx: ToolContext) -> Meter:
        """The site's ``USAGE_LIMITS`` and the assistant's own limits, for the user of ``ctx``."""
        own = parse_limits(list(assistant.get_usage_limits(ctx)), f"{type(assistant).__qualname__}.usage_limits")
        assistant_id = assistant.id or ""
        limits = []
        for limit in [*site_limits(), *own]:
            key = scope_key(limit, ctx, assistant_id)
            if key is not None:  # a callable scope that does not apply to this user
                limits.append((limit, key))
        user_id = getattr(ctx.user, "pk", None)
        keys = {"user": str(user_id) if user_id is not None else None, "assistant": assistant_id}
        counted = [Counted(scope, key, period) for scope, period in ALWAYS_COUNTED if (key := keys[scope]) is not None]
        counted += [Counted(limit.scope, key, limit.period) for limit, key in limits]
        # Rows of the user scope name the user too, so the admin can show and filter them by user.
        counted = [Counted(c.scope, c.key, c.period, user_id if c.scope == "user" else None) for c in counted]
        unpriced = ""
        if any(limit.quantity == "cost" for limit, _key in limits):
            pricing = Pricing(assistant.get_model(), assistant.get_price_provider())
            unpriced = "" if pricing.priced else pricing.model
        return cls(limits, counted, unpriced)

    # Before a model call ----------------------------------------------------------------------------

    def check(self, *, new_turn: bool, status: str | None = None) -> None:
        """Raise ``UsageLimitExceeded`` if a limit has no room left: for a new message every limit, before a
        model call within a turn the ``tokens`` and ``tool_calls`` limits (the turn itself was counted). An
        unpriced model is refused only while a cost limit is among ``limits``: a client's direct calls (MCP) keep
        their ``tool_calls`` limits only, since they spend no money."""
        if self.unpriced_model and any(limit.quantity == "cost" for limit, _key in self.limits):
            raise UnpricedModel(
                _("This assistant's model %(model)s has no price, and a cost limit applies: its use cannot be counted.")
                % {"model": self.unpriced_model},
                status=status,
            )
        limits = [(limit, key) for limit, key in self.limits if new_turn or limit.quantity != "turns"]
        if not limits:
            return
        now = timezone.now()
        rows = [Counted(limit.scope, key, limit.period).row(now) for limit, key in limits]
        used = read_counters(rows)
        over = []
        for (limit, _key), row in zip(limits, rows, strict=True):
            amounts = used.get(row, {})
            amount, blind = amounts.get(limit.quantity, 0), room_unknown(limit, amounts)
            if amount >= limit.maximum or blind:
                over.append((window(limit.period, now)[1], limit, amount, blind))
        if over:
            # The one that lasts longest: retrying before it resets cannot succeed.
            end, limit, amount, blind = max(over, key=lambda item: item[0])
            raise exceeded(limit, amount, end, now, status=status, unknown=blind)

    # After a model call -----------------------------------------------------------------------------

    def add(
        self,
        *,
        tokens: int = 0,
        turns: int = 0,
        tool_calls: int = 0,
        cost: Decimal | None = Decimal(0),
        unknown: bool = False,
    ) -> None:
        """Count usage now; the turn's next write stores it in its own transaction (see ``pending``): no commit
        of its own, and a check before the next model call comes after that write. ``cost=None``: an answer
        with tokens whose model has no price. ``unknown``: an answer whose usage the endpoint did not report
        (``tokens`` and ``cost`` are then what ``UNKNOWN_USAGE`` makes of it), unpriced whatever its cost."""
        unpriced = int((cost is None and tokens > 0) or unknown)
        self.pending += Counts(tokens, turns, tool_calls, cost or Decimal(0), unpriced, int(unknown))

    def stored(self, counts: Counts) -> None:
        """``counts`` of ``pending`` were added to the rows of ``row_ids`` by the caller's write."""
        self.pending -= counts

    def flush(self) -> None:
        """Store what is pending by itself, when no write of the turn is left to carry it (it lost its claim, or
        the write that carried it failed): a transaction of its own."""
        counts, now = self.pending, timezone.now()
        if not counts:
            return
        with transaction.atomic(using=self.database):
            self.count(counts, now)
        self.stored(counts)

    def count(
        self, counts: Counts, now: datetime.datetime, *, reserve: bool = False, status: str | None = None
    ) -> None:
        """Add ``counts`` to the turn's rows, in the caller's transaction.

        The rows are locked first, in the order of their ids, and only then updated: turns that count into the
        same rows at once wait for each other in one order instead of deadlocking (one ``UPDATE`` of several rows
        locks them in whatever order the database happens to scan them). With ``reserve`` (a new turn) the locked
        rows, which no other turn can change until the commit, decide whether the turn may start: every limit
        needs room for what ``counts`` adds to it, else ``UsageLimitExceeded`` and the caller's transaction, and
        the claim made in it, roll back. N turns at once against a limit of L turns so start at most L.
        """
        ids = self.row_ids(now)
        increments = counts.increments()
        database = self.database
        features = connections[database].features
        if not reserve and increments and features.update_can_self_select:
            # One statement: the rows locked in the order of their ids by its subquery, then added to. A database
            # without row locks (SQLite: the transaction holds the whole database) needs no order.
            rows = rows_to_add_to(database, ids, locked=features.has_select_for_update)
            added = rows.update(updated_at=now, **increments)
            if added == len(ids):
                return
            # A remembered row is gone (a flushed database): the rows that were there are counted; make the rest.
            there = lock_counters(ids)
            wanted = list(dict.fromkeys(counted.row(now) for counted in self.counted))  # in ``row_ids``' order
            fresh = self.row_ids(now, fresh=True)
            missing = [pk for pk, row in zip(fresh, wanted, strict=True) if row not in there]
            counters().filter(pk__in=missing).update(updated_at=now, **increments)
            return
        found = lock_counters(ids)
        if len(found) < len(ids):  # a remembered row is gone (a flushed database): make the rows again
            ids = self.row_ids(now, fresh=True)
            found = lock_counters(ids)
        if reserve:
            self.reserve(found, counts, now, status)
        if increments:
            counters().filter(pk__in=ids).update(updated_at=now, **increments)

    def reserve(self, found: dict[tuple, dict[str, Any]], counts: Counts, now: datetime.datetime,
                status: str | None) -> None:  # fmt: skip
        """Refuse ``counts`` if a limit has no room for them in the locked rows ``found``: a limit whose counter
        is at its maximum refuses anything, and one of what is counted before it is spent (turns) refuses more
        than its room. Generic over the amount, so a limit counted in money works the same."""
        over = []
        for limit, key in self.limits:
            amounts = found.get(Counted(limit.scope, key, limit.period).row(now), {})
            used = amounts.get(limit.quantity, 0)
            blind = room_unknown(limit, amounts)
            if used >= limit.maximum or used + getattr(counts, limit.quantity) > limit.maximum or blind:
                over.append((window(limit.period, now)[1], limit, used, blind))
        if over:
            # The one that lasts longest: retrying before it resets cannot succeed.
            end, limit, used, blind = max(over, key=lambda item: item[0])
            raise exceeded(limit, used, end, now, status=status, unknown=blind)

    def prepare(self) -> None:
        """Find or make the rows the turn counts in, if this process has not seen them yet, before the turn's
        first transaction: inserting a row that exists locks it (MariaDB) or waits for the turn inserting it
        (PostgreSQL), a lock held to the commit, taken out of order. The rows found are not inserted; the insert
        of the others is a transaction of its own on ``database``, which turns inserting the same new rows at
        once can deadlock: the caller tries it again."""
        self.row_ids(timezone.now())

    @property
    def database(self) -> str:
        """The database alias the counters are written to."""
        return router.db_for_write(counter_model())

    @property
    def limited(self) -> bool:
        """Whether counts must reach the rows before the next check (limits apply); otherwise the turn's end
        stores them, for the admin and ``GET usage/``."""
        return bool(self.limits)

    def row_ids(self, now: datetime.datetime, *, fresh: bool = False) -> list[int]:
        """The ids of the rows the turn counts in now. A process remembers them for the period (rows are never
        deleted by the app; ``fresh`` looks again, after an update found fewer rows than ids).

        The rows this process does not know yet are read first: another process, or this one before a restart,
        has usually made them, and a read takes no lock. Only the rows nobody has counted in yet are inserted
        (a race with another process is fine: the database keeps one), then read."""
        known: dict[tuple, int] = toolcalling_settings.derived("usage_counter_ids", dict)
        rows = {counted.row(now): counted for counted in self.counted}
        unknown = [row for row in rows if fresh or row not in known]
        if unknown:
            found = row_ids_of(unknown)
            if absent := sorted(row for row in unknown if row not in found):  # in one order, as they lock
                UsageCounter = counter_model()
                UsageCounter.objects.bulk_create(
                    [UsageCounter(scope=s, key=k, period=p, period_start=start, updated_at=now,
                                  user_id=rows[(s, k, p, start)].user_id) for s, k, p, start in absent],
                    ignore_conflicts=True,
                )  # fmt: skip
                found |= row_ids_of(absent)
            known.update(found)
        return [known[row] for row in rows]


def room_unknown(limit: UsageLimit, amounts: dict[str, Any]) -> bool:
    """Whether ``limit`` cannot be checked against its counter's ``amounts``: under ``UNKNOWN_USAGE = "stop"``, a
    limit of tokens or money whose period counted an answer of unknown usage (what it used may be all the room)."""
    return (
        toolcalling_settings.UNKNOWN_USAGE == "stop"
        and limit.quantity in UNKNOWN_QUANTITIES
        and bool(amounts.get("unknown"))
    )


def scope_key(limit: UsageLimit, ctx: ToolContext, assistant_id: str) -> str | None:
    """Whose counter a limit counts in for this context; ``None`` when a callable scope returns ``None``."""
    if limit.per == "user":
        return str(getattr(ctx.user, "pk", "") or "")
    if limit.per == "assistant":
        return assistant_id
    if limit.per == "site":
        return ""
    assert callable(limit.per)
    value = limit.per(ctx)
    if value is None:
        return None
    key = str(value)
    if len(key) > MAX_KEY_LENGTH:  # never cut: two long keys that share a start must not share a counter
        key = "sha256:" + hashlib.sha256(key.encode()).hexdigest()
    return key


def counter_model() -> type[UsageCounter]:
    """The counters' model, imported when first used: ``Assistant`` imports this package (for its limits)
    while Django is still loading the apps, before models can be imported."""
    from ..models import UsageCounter

    return UsageCounter


def counters() -> QuerySet[UsageCounter]:
    """The counters on the database they are written to."""
    UsageCounter = counter_model()
    return UsageCounter.objects.using(router.db_for_write(UsageCounter))


# A thread's querysets of the rows an ``UPDATE`` adds to, by database and row ids: the same on every turn of the
# period, and building them is some 570 function calls on PostgreSQL. Per thread: the copy ``update()`` compiles
# shares the subquery of the one kept, and compiling it changes that subquery's alias counts while it runs.
# Bounded: the ids change with the period.
_TARGETS = threading.local()
MAX_TARGETS = 64


def rows_to_add_to(database: str, ids: list[int], *, locked: bool) -> QuerySet[UsageCounter]:
    """The counters ``ids`` on ``database``, to ``update()``: with ``locked``, locked in the order of their
    ids by a subquery (``SELECT ... ORDER BY id FOR UPDATE``) before the update adds to them. Built once per
    thread for the same database and ids; ``update()`` compiles a copy each time, leaving this one as it was."""
    built: dict[tuple[str, tuple[int, ...], bool], QuerySet[UsageCounter]] = _TARGETS.__dict__.setdefault("built", {})
    key = (database, tuple(ids), locked)
    if (found := built.get(key)) is not None:
        return found
    table = counter_model().objects.using(database)
    if locked:
        in_order = table.select_for_update().filter(pk__in=ids).order_by("pk").values("pk")
        found = table.filter(pk__in=in_order)
    else:
        found = table.filter(pk__in=ids)
    if len(built) >= MAX_TARGETS:
        built.clear()
    built[key] = found
    return found


def lock_counters(ids: list[int]) -> dict[tuple, dict[str, Any]]:
    """Lock the counters ``ids`` in the order of their ids (on SQLite the transaction holds the whole database)
    and read them as they are now: ``{(scope, key, period, period_start): {quantity: amount}}``."""
    names = ("scope", "key", "period", "period_start", *map(column, AMOUNTS))
    locked = counters().select_for_update().filter(pk__in=ids).order_by("pk").values_list(*names)
    return {tuple(values[:4]): dict(zip(AMOUNTS, values[4:], strict=True)) for values in locked}


def matching(rows: Iterable[tuple[str, str, str, datetime.datetime]]) -> QuerySet[UsageCounter]:
    """The counters that may be ``rows``: two plain lookups, cheaper to build than an OR of four keys per row;
    the caller picks the exact rows. Read from the database the counters are written to: what is read here
    decides a write (which rows to add to) or a refusal (a limit reached)."""
    rows = list(rows)
    keys, starts = {row[1] for row in rows}, {row[3] for row in rows}
    return counters().filter(key__in=keys, period_start__in=starts).order_by()


def row_ids_of(rows: list[tuple[str, str, str, datetime.datetime]]) -> dict[tuple, int]:
    """The ids of those of ``rows`` that exist, in one query."""
    wanted = set(rows)
    found = matching(rows).values_list("pk", "scope", "key", "period", "period_start")
    return {row: pk for pk, *values in found if (row := tuple(values)) in wanted}


def read_counters(rows: list[tuple[str, str, str, datetime.datetime]]) -> dict[tuple, dict[str, Any]]:
    """The counters of ``rows`` in one query, by amount (``cost`` a ``Decimal``); a row nobody counted in yet is
    missing (zero)."""
    if not rows:
        return {}
    wanted = set(rows)
    values = matching(rows).values_list("scope", "key", "period", "period_start", *map(column, AMOUNTS))
    found = {tuple(row[:4]): dict(zip(AMOUNTS, row[4:], strict=True)) for row in values}
    return {row: v for row, v in found.items() if row in wanted}


def exceeded(
    limit: UsageLimit,
    used: int,
    end: datetime.datetime,
    now: datetime.datetime,
    *,
    status: str | None = None,
    unknown: bool = False,
) -> UsageLimitExceeded:
    """The error for a limit with no room left, worded for the user, with when it resets (``status``: the
    conversation's, for the error body, when no turn started; ``unknown``: its room is unknown, see
    ``room_unknown``)."""
    words = {
        "tokens": pgettext("toolcalling usage", "tokens"),
        "turns": pgettext("toolcalling usage", "messages"),
        "tool_calls": pgettext("toolcalling usage", "tool calls"),
        "cost": toolcalling_settings.CURRENCY,
    }
    periods = {
        "hour": pgettext("toolcalling usage", "hour"),
        "day": pgettext("toolcalling usage", "day"),
        "month": pgettext("toolcalling usage", "month"),
    }
    values = {
        "maximum": formats.number_format(limit.maximum, force_grouping=True),
        "quantity": words[limit.quantity],
        "period": periods[limit.period],
        "wait": timeuntil(end, now),
        "scope": limit.scope,
    }
    sentences = {
        "user": _("You have reached your limit of %(maximum)s %(quantity)s per %(period)s. It resets in %(wait)s."),
        "assistant": _(
            "This assistant has reached its limit of %(maximum)s %(quantity)s per %(period)s. It resets in %(wait)s."
        ),
        "site": _("This site has reached its limit of %(maximum)s %(quantity)s per %(period)s. It resets in %(wait)s."),
    }
    other = _("The limit of %(maximum)s %(quantity)s per %(period)s for %(scope)s is reached. It resets in %(wait)s.")
    blind = _(
        "The model endpoint did not report what an earlier answer used, so the limit of %(maximum)s %(quantity)s "
        "per %(period)s cannot be checked. It resets in %(wait)s."
    )
    sentence = blind if unknown else sentences.get(limit.scope if isinstance(limit.per, str) else "", other)
    detail = sentence % values
    described = {**limit.describe(), "used": shown(used), "resets_at": end.isoformat()}
    wait = max(1, math.ceil((end - now).total_seconds()))
    return UsageLimitExceeded(detail, status=status, wait=wait, limit=described)
