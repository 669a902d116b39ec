"""A call whose process died while it ran and whose tool may not run again waits for a person: "outcome unknown";
and each call keeps the process that ran it (or was to). Calls stored before keep an empty one: who ran them is
not known."""

import toolcalling.models.tool_calls
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("toolcalling", "0013_unknown_usage"),
    ]

    operations = [
        migrations.AddField(
            model_name="toolcall",
            name="worker",
            field=models.CharField(
                blank=True,
                default="",
                help_text="The process that ran the call, or was to run it: host name and process id.",
                max_length=200,
                verbose_name="worker",
            ),
        ),
        migrations.AlterField(
            model_name="toolcall",
            name="worker",
            field=models.CharField(
                blank=True,
                default=toolcalling.models.tool_calls.this_process,
                help_text="The process that ran the call, or was to run it: host name and process id.",
                max_length=200,
                verbose_name="worker",
            ),
        ),
        migrations.AlterField(
            model_name="toolcall",
            name="status",
            field=models.CharField(
                choices=[
                    ("awaiting_approval", "Awaiting approval"),
                    ("approved", "Approved"),
                    ("rejected", "Rejected"),
                    ("running", "Running"),
                    ("succeeded", "Succeeded"),
                    ("failed", "Failed"),
                    ("cancelled", "Cancelled"),
                    ("expired", "Expired"),
                    ("outcome_unknown", "Outcome unknown"),
                ],
                help_text="Where the call stands.",
                max_length=20,
                verbose_name="status",
            ),
        ),
    ]
