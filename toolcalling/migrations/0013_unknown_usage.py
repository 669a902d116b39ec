"""Answers whose endpoint reported no usage, or a malformed one, are marked as such (their cost unknown, never 0),
and the usage counters count them, so a token or cost limit never takes them for free."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("toolcalling", "0012_provider_items_and_failed_results"),
    ]

    operations = [
        migrations.AddField(
            model_name="message",
            name="usage_unknown",
            field=models.BooleanField(
                default=False,
                help_text="On model answers: the endpoint reported no usage, or a malformed one; the token counts are then 0 and mean nothing, and the cost is unknown (empty), never 0.",
                verbose_name="usage unknown",
            ),
        ),
        migrations.AddField(
            model_name="usagecounter",
            name="unknown_usage",
            field=models.PositiveBigIntegerField(
                default=0,
                help_text='Model answers whose endpoint reported no usage or a malformed one (counted in unpriced answers too): under UNKNOWN_USAGE = "stop" a token or cost limit of this period has no room while there are any.',
                verbose_name="answers of unknown usage",
            ),
        ),
    ]
