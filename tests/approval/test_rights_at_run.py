"""Rights are checked again when the worker runs an approved call: an approval may come hours after the
request, and a user whose rights were taken away meanwhile does not get the tool run for them."""

from django.contrib.auth.models import Permission

from tests.approvalapp.models import Counter
from tests.services import wait_until
from toolcalling.models import Conversation, Message, ToolCall

URL = "/api/toolcalling/"


def permission(codename):
    return Permission.objects.get(codename=codename, content_type__app_label="approvalapp")


def ask(api, conversation_id, model, tool, arguments):
    model.call(tool, arguments)
    response = api.post(f"{URL}conversations/{conversation_id}/messages/", {"content": "please"}, format="json")
    assert response.status_code == 201, response.content
    return ToolCall.objects.get(pk=response.json()["awaiting_approval"][0]["id"])


def finished(call):
    """Wait until the worker answered the call and the conversation went on; the call, as stored then."""

    def done():
        conversation = Conversation.objects.get(pk=call.conversation_id)
        last = conversation.messages.order_by("-id").first()
        return conversation.status == "idle" and last.role == "assistant"

    wait_until(done, what="the worker to answer the call and continue the conversation")
    return ToolCall.objects.get(pk=call.pk)


def test_a_tool_permission_taken_away_while_the_call_waited_fails_it_on_the_worker(
    api, alice, approver_api, worker_model
):
    alice.user_permissions.add(permission("change_counter"))
    conversation = api.post(f"{URL}conversations/", {"assistant": "ops"}, format="json").json()
    call = ask(api, conversation["id"], worker_model, "reset", {"name": "stock"})
    alice.user_permissions.remove(permission("change_counter"))  # taken away before anyone approved
    worker_model.reply("Sorry, you are no longer allowed to reset counters.")
    assert approver_api.post(f"{URL}tool-calls/{call.pk}/approve/").status_code == 200
    call = finished(call)
    reason = "the user no longer has the permissions this tool needs (approvalapp.change_counter)"
    assert (call.status, call.error) == ("failed", reason)
    assert Message.objects.get(role="tool", tool_call_id=call.call_id).content == f"Error: not run: {reason}."
    assert not Counter.objects.filter(name="reset-stock").exists()  # the tool never ran
    worker_model.assert_done()


def test_an_assistant_taken_away_while_the_call_waited_fails_it_on_the_worker(api, alice, approver_api, worker_model):
    alice.user_permissions.add(permission("view_counter"))
    conversation = api.post(f"{URL}conversations/", {"assistant": "clerk"}, format="json").json()
    call = ask(api, conversation["id"], worker_model, "bump", {"name": "clerked"})
    alice.user_permissions.remove(permission("view_counter"))
    worker_model.reply("You can no longer use this assistant.")
    assert approver_api.post(f"{URL}tool-calls/{call.pk}/approve/").status_code == 200
    call = finished(call)
    assert (call.status, call.error) == ("failed", "the user may no longer use the assistant 'clerk'")
    assert not Counter.objects.filter(name="clerked").exists()
    worker_model.assert_done()


def test_rights_still_held_run_the_call_as_before(api, alice, approver_api, worker_model):
    alice.user_permissions.add(permission("change_counter"))
    conversation = api.post(f"{URL}conversations/", {"assistant": "ops"}, format="json").json()
    call = ask(api, conversation["id"], worker_model, "reset", {"name": "kept"})
    worker_model.reply("Reset.")
    assert approver_api.post(f"{URL}tool-calls/{call.pk}/approve/").status_code == 200
    assert finished(call).status == "succeeded"
    assert Counter.objects.get(name="reset-kept").value == 1
    worker_model.assert_done()


def test_a_requester_deactivated_while_the_call_waited_does_not_get_it_run_on_the_worker(
    api, alice, approver_api, worker_model
):
    conversation = api.post(f"{URL}conversations/", {"assistant": "ops"}, format="json").json()
    call = ask(api, conversation["id"], worker_model, "bump", {"name": "left"})
    alice.is_active = False  # the account closed before anyone approved; ops and bump need no permission
    alice.save(update_fields=["is_active"])
    worker_model.reply("Your account is closed, so nothing was bumped.")
    assert approver_api.post(f"{URL}tool-calls/{call.pk}/approve/").status_code == 200
    call = finished(call)
    assert (call.status, call.error) == ("failed", "the user's account is no longer active")
    told = Message.objects.get(role="tool", tool_call_id=call.call_id).content
    assert told == "Error: not run: the user's account is no longer active."
    assert not Counter.objects.filter(name="left").exists()  # the tool never ran
    worker_model.assert_done()
