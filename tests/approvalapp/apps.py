"""A tiny app for the approval tests: a counter row the gated tool bumps, and an assistant using it."""

from django.apps import AppConfig


class ApprovalAppConfig(AppConfig):
    name = "tests.approvalapp"
    label = "approvalapp"
    default_auto_field = "django.db.models.BigAutoField"
