"""toolcalling.W008: the app's URLs included but answered by a pattern before them (a CMS's catch-all), seen
with the URLconfs a site writes: the catch-all first or last, a CMS's nested include, a narrower pattern."""

from __future__ import annotations

from types import ModuleType

from django.core.checks import run_checks
from django.http import HttpResponse
from django.test import override_settings
from django.urls import include, path, re_path


def page(request, path=""):  # stands for a CMS's page view
    return HttpResponse("a page")


def urlconf(*patterns) -> ModuleType:
    """A URLconf module, as ROOT_URLCONF or include() take it (resolvers are cached by it, so a module)."""
    module = ModuleType("urlconf")
    module.urlpatterns = list(patterns)  # type: ignore[attr-defined]
    return module


# What Wagtail's wagtail.urls holds: one pattern that matches every path made of slugs.
CMS_URLS = urlconf(re_path(r"^((?:[\w\-]+/)*)$", page, name="cms_serve"))
OURS = path("api/toolcalling/", include("toolcalling.urls"))


def w008(*patterns) -> list:
    with override_settings(ROOT_URLCONF=urlconf(*patterns)):
        return [m for m in run_checks(tags=["toolcalling"]) if m.id == "toolcalling.W008"]


def test_a_catch_all_before_the_apps_urls_is_named_with_its_view():
    (warning,) = w008(re_path(r"^.*$", page, name="page"), OURS)
    assert "/api/toolcalling/assistants/ is answered by another URL pattern" in warning.msg
    assert "'^.*$'" in warning.msg and "tests.core.test_url_checks.page" in warning.msg
    assert "before that pattern" in warning.hint and "*urlpatterns" in warning.hint


def test_a_cms_include_before_the_apps_urls_warns_and_after_them_does_not():
    (warning,) = w008(path("", include(CMS_URLS)), OURS)
    assert r"'^((?:[\\w\\-]+/)*)$'" in warning.msg
    assert w008(OURS, path("", include(CMS_URLS))) == []
    assert w008(path("admin-like/", page), OURS, re_path(r"^.*$", page)) == []


def test_the_prepend_the_docs_give_fixes_a_urlconf_that_ends_with_a_catch_all():
    urlpatterns = [path("search/", page), path("", include(CMS_URLS))]
    assert len(w008(*urlpatterns, OURS)) == 1  # urlpatterns += [...] at the end: shadowed
    assert w008(OURS, *urlpatterns) == []  # urlpatterns = [path("api/toolcalling/", ...), *urlpatterns]


def test_a_narrower_pattern_that_takes_one_route_is_named_with_that_route():
    other = path("api/toolcalling/conversations/<uuid:pk>/messages/", page, name="mine")
    (warning,) = w008(other, OURS)
    assert "/api/toolcalling/conversations/00000000-0000-0000-0000-000000000000/messages/" in warning.msg
    assert "'api/toolcalling/conversations/<uuid:pk>/messages/'" in warning.msg


def test_a_site_that_does_not_include_the_apps_urls_gets_no_warning():
    assert w008(re_path(r"^.*$", page)) == []
