"""The HTTP layer every edge shares (the REST API, the frontends' protocols, MCP): the one error shape and the HTTP
status of each error code (and a stream's end when its reader loses the database), posting a message (its checks,
its turn, the turn throttle, a streamed or queued turn), and a message as every edge shows it. The edges import
this and the packages below it, never each other.
"""

from ._errors import HTTP_STATUS, ErrorResponses, JSONParser, error_body, exception_handler, http_status
from ._lost_database import DatabaseGuard
from ._messages import messages_json, messages_queryset
from ._posting import MessagePost, PostsMessages, database_lost
from ._serializers import (
    AttachmentSerializer,
    JSONField,
    MessageInputSerializer,
    MessageSerializer,
    ToolCallSerializer,
    ToolCallStatusField,
    in_parameter_order,
)
from ._streams import (
    EventStreamMixin,
    accepts_event_stream,
    is_asgi,
    on_turn_loop,
    release_connections,
)
from ._throttling import DEFAULT_TURN_RATE, TurnRateThrottle

__all__ = [
    "DEFAULT_TURN_RATE",
    "HTTP_STATUS",
    "AttachmentSerializer",
    "DatabaseGuard",
    "ErrorResponses",
    "EventStreamMixin",
    "JSONField",
    "JSONParser",
    "MessageInputSerializer",
    "MessagePost",
    "MessageSerializer",
    "PostsMessages",
    "ToolCallSerializer",
    "ToolCallStatusField",
    "TurnRateThrottle",
    "accepts_event_stream",
    "database_lost",
    "error_body",
    "exception_handler",
    "http_status",
    "in_parameter_order",
    "is_asgi",
    "messages_json",
    "messages_queryset",
    "on_turn_loop",
    "release_connections",
]
