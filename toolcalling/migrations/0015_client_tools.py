"""Client tools: a call of a tool that runs in the browser waits for the result the user's browser sends
(``approver="client"``)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("toolcalling", "0014_outcome_unknown"),
    ]

    operations = [
        migrations.AlterField(
            model_name="toolcall",
            name="approver",
            field=models.CharField(
                choices=[("staff", "A staff member"), ("user", "The user"), ("client", "The user's browser")],
                default="staff",
                help_text=(
                    "Who decides a gated call: a staff member, or the conversation's own user; or, for a client "
                    "tool's call, the user's browser, which runs it and sends its result."
                ),
                max_length=10,
                verbose_name="approver",
            ),
        ),
    ]
