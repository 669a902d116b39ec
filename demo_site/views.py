"""The demo's own pages: the chat page customers see after signing in."""

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.csrf import ensure_csrf_cookie

from .shop.assistants import ShopAssistant


@login_required
@ensure_csrf_cookie  # the page's fetch() calls read the CSRF token from this cookie
def chat(request: HttpRequest) -> HttpResponse:
    """The chat page; all data comes from the toolcalling REST API, called from the browser."""
    return render(
        request,
        "shop/chat.html",
        {
            "assistant_id": ShopAssistant.id,
            "assistant_name": ShopAssistant.name,
            "uses_offline_model": settings.DEMO_USES_OFFLINE_MODEL,
        },
    )
