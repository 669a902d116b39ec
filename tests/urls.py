from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView

from tests.testapp import views

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/toolcalling/", include("toolcalling.urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    # The chat page of the browser tests.
    path("chat/<str:assistant>/", views.chat, name="chat"),
    path("accounts/login/", auth_views.LoginView.as_view(template_name="testapp/login.html"), name="login"),
]
