"""A desk with work on it: a call waiting for a staff approver, a call that ran, and the people involved."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.test import Client
from rest_framework.test import APIClient

from toolcalling import approval
from toolcalling.models import Conversation, Message, ToolCall
from toolcalling.toolkit import assistants, tools


@pytest.fixture
def approver(db: Any) -> Any:
    user = get_user_model().objects.create_user("carol", password="pw", is_staff=True)
    user.user_permissions.add(Permission.objects.get(codename="approve_toolcall"))
    return get_user_model().objects.get(pk=user.pk)


def logged_in(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def ask(api: APIClient, model: Any, tool: str, arguments: dict, text: str, reply: str | None = None) -> Conversation:
    """alice asks the ``ops`` assistant; the model calls ``tool`` (then answers ``reply`` once it ran)."""
    conversation = api.post("/api/toolcalling/conversations/", {"assistant": "ops"}, format="json").json()
    model.call(tool, arguments)
    if reply is not None:
        model.reply(reply)
    response = api.post(f"/api/toolcalling/conversations/{conversation['id']}/messages/", {"content": text})
    assert response.status_code == 201, response.content
    return Conversation.objects.get(pk=conversation["id"])


@pytest.fixture
def desk(api: APIClient, model: Any) -> dict[str, ToolCall]:
    """alice's gated ``bump`` waiting for staff (it has a preview), and an ``add`` that ran at once."""
    waiting = ask(api, model, "bump", {"name": "orders", "by": 2}, "Zwei mehr, bitte / 두 개 더 부탁해요")
    ran = ask(api, model, "add", {"a": 1, "b": 2}, "1 + 2 = ?", reply="3")
    return {
        "waiting": ToolCall.objects.get(conversation=waiting, status="awaiting_approval"),
        "ran": ToolCall.objects.get(conversation=ran, status="succeeded"),
    }


def site_data() -> list[str]:
    """What the test site and this test put on the pages: names, words, arguments, descriptions, previews."""
    data: list[str] = list(get_user_model().objects.values_list("username", flat=True))
    data += Message.objects.values_list("content", flat=True)
    for conversation in Conversation.objects.all():
        data += [conversation.title, str(conversation), str(conversation.pk)]
    for cls in assistants.all():
        data += [cls.id or "", str(cls.name), str(cls.description or "")]
    for call in ToolCall.objects.select_related("conversation"):
        data += [call.name, call.call_id, call.result, call.raw_arguments]
        data += [str(v) for item in call.arguments.items() for v in item]
        for indent in (None, 2):
            for sort in (False, True):
                data.append(json.dumps(call.arguments, indent=indent, ensure_ascii=False, sort_keys=sort))
        if tools.is_registered(call.name):
            description = str(tools.get(call.name).description)
            data += [description, *description.splitlines()]
        found = approval.preview(call)
        if found is not None and isinstance(found.value, dict):
            data += [str(v) for item in found.value.items() for v in item]
    return data
