"""A counter row: the gated tool adds one, so a test can tell how often the tool really ran."""

from django.db import models


class Counter(models.Model):
    name = models.CharField(max_length=50, unique=True)
    value = models.IntegerField(default=0)
