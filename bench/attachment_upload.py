"""What an attachment upload costs against a plain Django ``FileField`` save of the same file, in the same run.

Run: ``.venv/bin/python bench/attachment_upload.py [--rounds 30]``.

Both sides parse the same multipart body (built once per size by ``RequestFactory``) in a view called directly:
the app's ``POST attachments/`` (its upload handler sniffing the first bytes and counting the size while the body
is read, storage under a generated name, the row, the JSON answer), and a plain Django view that saves the upload
into a model's ``FileField`` (Django's default upload handlers, the field's own storage write, the row). Both store
into the same ``FileSystemStorage`` (the test site's MEDIA_ROOT). Sides alternate per round; the medians are
compared. Then memory: Python allocations (tracemalloc) while 100 uploads of 1 MiB run, and the peak of one
20 MiB upload, which is streamed to a temporary file and moved into storage, never held whole.
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("TOOLCALLING_TEST_VAR", tempfile.mkdtemp(prefix="toolcalling-bench-"))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.contrib.auth import get_user_model  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection, models  # noqa: E402
from django.http import HttpRequest, JsonResponse  # noqa: E402
from django.test import RequestFactory, override_settings  # noqa: E402

from toolcalling.api.attachments import AttachmentUploadView  # noqa: E402
from toolcalling.models import Attachment  # noqa: E402

PNG_HEAD = b"\x89PNG\r\n\x1a\n"
SIZES = {"100 KiB": 100 * 1024, "2 MiB": 2 * 1024 * 1024, "20 MiB": 20 * 1024 * 1024}


class PlainFile(models.Model):
    """The baseline: a model with a FileField, as a site stores uploads without the app."""

    file = models.FileField(upload_to="bench/plain/%Y/%m/")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        app_label = "testapp"


def plain_view(request: HttpRequest) -> JsonResponse:
    upload = request.FILES["file"]
    stored = PlainFile(file=upload)
    stored.save()
    return JsonResponse({"id": stored.pk, "name": stored.file.name, "size": stored.file.size}, status=201)


app_view = AttachmentUploadView.as_view()


def request_for(body: dict[str, Any], user: Any) -> Any:
    """A multipart POST of ``body``, signed in as ``user`` (and past CSRF, as the session's token would be)."""
    request = RequestFactory().post("/api/toolcalling/attachments/", body)
    request.user = user
    request._dont_enforce_csrf_checks = True
    return request


def payload(size: int) -> bytes:
    return PNG_HEAD + os.urandom(size - len(PNG_HEAD))


class Upload:
    """One multipart body, encoded once; each call posts it again through a fresh request."""

    def __init__(self, data: bytes, user: Any) -> None:
        from django.core.files.uploadedfile import SimpleUploadedFile

        self.request = request_for({"file": SimpleUploadedFile("shot.png", data, "image/png")}, user)
        self.body = self.request.read()  # the encoded body, replayed below
        self.meta = dict(self.request.META)
        self.user = user

    def fresh(self) -> Any:
        from io import BytesIO

        from django.core.handlers.wsgi import WSGIRequest

        meta = {**self.meta, "wsgi.input": BytesIO(self.body), "CONTENT_LENGTH": str(len(self.body))}
        request = WSGIRequest(meta)
        request.user = self.user
        request._dont_enforce_csrf_checks = True
        return request


def timed(view: Any, upload: Upload) -> float:
    request = upload.fresh()
    started = time.perf_counter()
    response = view(request)
    elapsed = time.perf_counter() - started
    request.close()  # as Django's handler does after the response: the uploads' temporary files are closed
    assert response.status_code == 201, response.content
    return elapsed


def clean() -> None:
    for attachment in Attachment.objects.all():
        attachment.delete()  # its file goes with it
    for plain in PlainFile.objects.all():
        plain.file.delete(save=False)
        plain.delete()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--memory-uploads", type=int, default=100)
    options = parser.parse_args()
    call_command("migrate", verbosity=0)
    with connection.schema_editor() as editor:
        editor.create_model(PlainFile)
    user, _ = get_user_model().objects.get_or_create(username="bench")
    # One user uploads hundreds of files here, none sent: what a user may keep unsent is no bound of this bench
    # (its two counting queries per upload are still timed). The test site's upload throttle is off.
    unbounded = {"MAX_UNSENT": 1_000_000, "MAX_UNSENT_BYTES": 1 << 50}
    with override_settings(TOOLCALLING={**settings.TOOLCALLING, "ATTACHMENTS": unbounded}):
        measure(user, options)


def measure(user: Any, options: argparse.Namespace) -> None:
    print(f"Upload cost, median of {options.rounds} rounds (sides alternate), same multipart body each side:")
    for label, size in SIZES.items():
        upload = Upload(payload(size), user)
        rounds = max(5, options.rounds // (10 if size > 4 * 1024 * 1024 else 1))
        times: dict[str, list[float]] = {"app": [], "plain": []}
        timed(app_view, upload), timed(plain_view, upload)  # warm up
        for n in range(rounds):
            order = [("app", app_view), ("plain", plain_view)]
            for name, view in reversed(order) if n % 2 else order:
                times[name].append(timed(view, upload))
            if n % 10 == 9:
                clean()
        clean()
        app, plain = statistics.median(times["app"]), statistics.median(times["plain"])
        print(f"  {label:>8}: app {app * 1000:8.2f}ms  plain FileField {plain * 1000:8.2f}ms  ratio {app / plain:5.2f}"
              f"  ({rounds} rounds)")  # fmt: skip

    print(f"Memory over {options.memory_uploads} uploads of 1 MiB (tracemalloc, after each tenth):")
    upload = Upload(payload(1024 * 1024), user)
    timed(app_view, upload)
    gc.collect()
    tracemalloc.start()
    readings, peaks = [], []
    for n in range(options.memory_uploads):
        tracemalloc.reset_peak()
        timed(app_view, upload)
        peaks.append(tracemalloc.get_traced_memory()[1])
        if n % (options.memory_uploads // 10) == 0 or n == options.memory_uploads - 1:
            gc.collect()
            readings.append((n + 1, tracemalloc.get_traced_memory()[0]))
    for n, current in readings:
        print(f"  after {n:4} uploads: {current / 1024:8.1f} KiB allocated")
    (first, early), (last, late) = readings[1], readings[-1]
    growth = (late - early) / (last - first) / 1024
    print(f"  growth from upload {first} to {last}: {growth:.2f} KiB per upload; peak per upload: "
          f"median {statistics.median(peaks) / 1024:.0f} KiB, max {max(peaks) / 1024:.0f} KiB")  # fmt: skip
    clean()

    big = Upload(payload(SIZES["20 MiB"]), user)
    gc.collect()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    timed(app_view, big)
    peak = tracemalloc.get_traced_memory()[1] - base
    tracemalloc.stop()
    print(
        f"One 20 MiB upload: peak Python allocations {peak / 1024 / 1024:.2f} MiB above the start "
        f"(the file is {SIZES['20 MiB'] / 1024 / 1024:.0f} MiB; its body was built before the clock)"
    )
    clean()


if __name__ == "__main__":
    main()
