"""``usage.Increment``: what a turn adds to its conversation's totals and to the usage counters, added by the database
at the write as ``F() + n`` is, for less of Django's compiling."""

from decimal import Decimal

import pytest

from toolcalling.models import Conversation
from toolcalling.usage import Increment


@pytest.mark.django_db
def test_increments_add_to_the_row_as_the_database_has_it_not_as_a_writer_read_it(alice):
    conversation = Conversation.objects.create(user=alice, assistant_id="helper", prompt_tokens=5)
    rows = Conversation.objects.filter(pk=conversation.pk)
    rows.update(prompt_tokens=Increment("prompt_tokens", 7), total_tokens=Increment("total_tokens", 1))
    rows.update(prompt_tokens=Increment("prompt_tokens", 3))  # a second writer, which read 5
    assert rows.values_list("prompt_tokens", "total_tokens").get() == (15, 1)


@pytest.mark.django_db
def test_an_increment_names_the_updated_tables_column_beside_a_subquery_of_that_table(alice):
    """The usage counters' update on PostgreSQL filters by a subquery of their own table (its rows locked in order)."""
    conversation = Conversation.objects.create(user=alice, assistant_id="helper", cached_tokens=2)
    same = Conversation.objects.filter(pk=conversation.pk).order_by("pk").values("pk")
    assert Conversation.objects.filter(pk__in=same).update(cached_tokens=Increment("cached_tokens", 40)) == 1
    assert Conversation.objects.get(pk=conversation.pk).cached_tokens == 42


def test_an_increment_is_a_whole_number():
    for amount in (Decimal("0.5"), 1.5, True, "1"):
        with pytest.raises(TypeError):
            Increment("tokens", amount)  # type: ignore[arg-type]
