"""The rival app's config: nothing but a label and its locale directory."""

from django.apps import AppConfig


class RivalConfig(AppConfig):
    name = "tests.i18n.rivalapp"
    label = "i18n_rival"
