"""An answer's items as the model API issued them, and failed tool results marked as such.

``Message.reasoning`` held only the reasoning items of a Responses answer (or Anthropic's thinking blocks), so
the items that followed them went back without the ids the API pairs them by; the column now holds the whole
answer as issued and is renamed for it. Answers stored before keep their reasoning items, which later requests
leave out (the ids that went with them were never stored), as a changed model's would be.

``Message.is_error`` replaces reading a failed call from its result's text: the tool messages stored before
are marked from the status of the call they answer.
"""

from django.db import migrations, models
from django.db.models import Exists, OuterRef


def mark_failed_results(apps, schema_editor):
    Message = apps.get_model("toolcalling", "Message")
    ToolCall = apps.get_model("toolcalling", "ToolCall")
    db = schema_editor.connection.alias
    failed = ToolCall.objects.using(db).filter(
        conversation_id=OuterRef("conversation_id"), call_id=OuterRef("tool_call_id"), status="failed"
    )
    Message.objects.using(db).filter(role="tool").filter(Exists(failed)).update(is_error=True)


class Migration(migrations.Migration):
    dependencies = [
        ("toolcalling", "0011_attachments"),
    ]

    operations = [
        migrations.RenameField(model_name="message", old_name="reasoning", new_name="provider_items"),
        migrations.AlterField(
            model_name="message",
            name="provider_items",
            field=models.JSONField(
                blank=True,
                default=list,
                editable=False,
                help_text=(
                    "On assistant answers: the answer as the model API issued it (Responses output items with "
                    "their ids, Anthropic content blocks with their thinking signatures), sent back as it was on "
                    "later requests."
                ),
                verbose_name="provider items",
            ),
        ),
        migrations.AddField(
            model_name="message",
            name="is_error",
            field=models.BooleanField(
                default=False,
                help_text="On tool messages: whether the call failed (the model is told so where its API has a flag).",
                verbose_name="is error",
            ),
        ),
        migrations.RunPython(mark_failed_results, migrations.RunPython.noop, elidable=True),
    ]
