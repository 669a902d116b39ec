"""URLs of the REST API and the MCP endpoint.

Include them with ``path("api/toolcalling/", include("toolcalling.urls"))``."""

from django.urls import include, path, re_path
from rest_framework.routers import SimpleRouter

from .api import attachments, streams, usage, views
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
    path("mcp/<str:assistant_id>/", MCPView.as_view(), name="mcp"),
    path("", include(router.urls)),
    # Last: what is left under the resources (ending in "/", so APPEND_SLASH still redirects) is a JSON 404.
    re_path(
        r"^(?P<path>(?:assistants|attachments|conversations|tool-calls)/.*/)$", views.unknown_path, name="unknown-path"
    ),
]
