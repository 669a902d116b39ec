"""App config of the demo shop."""

from django.apps import AppConfig


class ShopConfig(AppConfig):
    name = "demo_site.shop"
    label = "shop"
    verbose_name = "Shop"
    default_auto_field = "django.db.models.BigAutoField"
