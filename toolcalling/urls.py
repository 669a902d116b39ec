"""URLs of the REST API, the frontends' endpoints (AI SDK, AG-UI) and the MCP endpoint.

Include them with ``path("api/toolcalling/", include("toolcalling.urls"))``."""

from django.urls import include, path, re_path
from rest_framework.routers import SimpleRouter

from .api import attachments, client_results, streams, usage, views
from .frontends import AGUIMessagesView, AGUIView, AISDKChatView, AISDKMessagesView, AISDKStreamView
from .mcp import MCPView

app_name = "toolcalling"

router = SimpleRouter()
router.register("conversations", views.ConversationViewSet, basename="conversation")
router.register("tool-calls", views.ToolCallViewSet, basename="toolcall")

urlpatterns = [
    path("assistants/", views.AssistantListView.as_view(), name="assistant-list"),
    path("conversations/<uuid:pk>/messages/", views.MessageListView.as_view(), name="conversation-messages"),
    path("conversations/<uuid:pk>/events/", streams.ConversationEventsView.as_view(), name="conversation-events"),
    path("attachments/", attachments.AttachmentUploadView.as_view(), name="attachment-list"),
    path("attachments/<uuid:pk>/content/", attachments.AttachmentContentView.as_view(), name="attachment-content"),
    path("usage/", usage.UsageView.as_view(), name="usage"),
    path("tool-calls/<int:pk>/result/", client_results.ClientResultView.as_view(), name="toolcall-result"),
    path("mcp/<str:assistant_id>/", MCPView.as_view(), name="mcp"),
    # The AI SDK's transport posts to its ``api`` URL as given and appends ``/{id}/stream``: no slash is needed.
    re_path(r"^ai-sdk/chat/?$", AISDKChatView.as_view(), name="ai-sdk-chat"),
    re_path(r"^ai-sdk/chat/(?P<chat_id>[^/]+)/stream/?$", AISDKStreamView.as_view(), name="ai-sdk-stream"),
    re_path(r"^ai-sdk/chat/(?P<chat_id>[^/]+)/messages/?$", AISDKMessagesView.as_view(), name="ai-sdk-messages"),
    re_path(r"^ag-ui/?$", AGUIView.as_view(), name="ag-ui"),
    re_path(r"^ag-ui/(?P<thread_id>[^/]+)/messages/?$", AGUIMessagesView.as_view(), name="ag-ui-messages"),
    path("", include(router.urls)),
    # Last: what is left under the resources (ending in "/", so APPEND_SLASH still redirects) is a JSON 404, and
    # so is anything under the frontends' paths, which take no slash at the end. "[\s\S]", not ".": a decoded
    # path may hold a line break ("%0A"), which "." would leave to Django's HTML 404.
    re_path(
        r"^(?P<path>(?:assistants|attachments|conversations|tool-calls|mcp)/[\s\S]*/)$",
        views.unknown_path,
        name="unknown-path",
    ),
    re_path(r"^(?P<path>(?:ai-sdk|ag-ui)/[\s\S]*)$", views.unknown_path, name="unknown-frontend-path"),
]
