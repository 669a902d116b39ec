"""Pages of the test site: a chat page using the template tag, as a site's own template would."""

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render


@login_required
def chat(request: HttpRequest, assistant: str = "shop") -> HttpResponse:
    return render(request, "testapp/chat.html", {"assistant": assistant})
