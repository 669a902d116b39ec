"""URLs of the demo site: the chat page, sign-in, the admin, the toolcalling API, its schema, the language switch."""

from django.conf import settings
from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path, re_path

from . import views

urlpatterns = [
    path("", views.chat, name="chat"),
    # Customers are not staff, so they cannot use the admin's login page.
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    path("api/toolcalling/", include("toolcalling.urls")),
    path("i18n/", include("django.conf.urls.i18n")),  # set_language: the language switcher in the header
    # The React example (examples/ai-sdk-react), once built: the AI SDK's useChat on the same API.
    path("react/", views.react, name="react"),
    re_path(r"^react/(?P<path>assets/[\w.-]+)$", views.react, name="react-asset"),
]

if settings.DEMO_OPENAPI:
    from drf_spectacular.views import SpectacularAPIView

    urlpatterns.append(path("api/schema/", SpectacularAPIView.as_view(), name="schema"))
