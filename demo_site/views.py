"""The demo's own pages: the chat page customers see after signing in."""

from pathlib import Path

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.csrf import ensure_csrf_cookie
from django.views.static import serve

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


# The React example (examples/ai-sdk-react), as `npm run build` writes it there.
REACT_BUILD = Path(__file__).resolve().parent.parent / "examples" / "ai-sdk-react" / "dist"


@ensure_csrf_cookie  # the page's POSTs read the CSRF token from this cookie, as the chat page's do
def react(request: HttpRequest, path: str = "") -> HttpResponse:
    """The React example's built page at /react/ (it signs in through the site's own sign-in page), and its files."""
    if not (REACT_BUILD / "index.html").exists():
        return HttpResponse(
            "The React example is not built: cd examples/ai-sdk-react && npm ci && npm run build",
            content_type="text/plain; charset=utf-8",
            status=404,
        )
    if path and not path.startswith("assets/"):
        raise Http404
    return serve(request, path or "index.html", document_root=str(REACT_BUILD))
