"""Opt-in cursor pagination of a conversation's history: ``?cursor=`` or ``?page_size=`` switch it on.

Without either, ``GET conversations/{id}/messages/`` answers the whole history as a list, as it always
has, so existing clients keep working. Pages go from the newest message back, which is what a chat
needs first; ``next`` leads to older messages.
"""

from __future__ import annotations

from rest_framework.pagination import CursorPagination
from rest_framework.request import Request


class MessageCursorPagination(CursorPagination):
    """Newest first, 50 a page by default (``?page_size=`` up to 200); cursors stay valid as messages are added."""

    ordering = "-id"
    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 200

    def is_requested(self, request: Request) -> bool:
        """Whether the client asked for pages; otherwise the history is answered whole."""
        params = request.query_params
        return self.cursor_query_param in params or self.page_size_query_param in params
