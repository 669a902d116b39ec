"""App config of the demo shop."""

from django.apps import AppConfig


class ShopConfig(AppConfig):
    name = "demo_site.shop"
    label = "shop"
    verbose_name = "Shop"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from toolcalling.signals import approval_requested, tool_call_outcome_unknown

        from .notifications import tell_approvers

        approval_requested.connect(tell_approvers, dispatch_uid="shop.tell_approvers")
        tool_call_outcome_unknown.connect(tell_approvers, dispatch_uid="shop.tell_approvers")
