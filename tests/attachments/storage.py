"""A file system storage that counts how often each stored file is opened for reading."""

from collections import Counter
from typing import ClassVar

from django.core.files.storage import FileSystemStorage

ALIAS = "counting"
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
    ALIAS: {"BACKEND": "tests.attachments.storage.CountingStorage"},
}


class CountingStorage(FileSystemStorage):
    """The test site's MEDIA_ROOT, as the default storage; ``opened`` counts the opens of each stored name."""

    opened: ClassVar[Counter[str]] = Counter()

    def _open(self, name, mode="rb"):
        CountingStorage.opened[name] += 1
        return super()._open(name, mode)
