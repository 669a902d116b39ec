"""File system storages for the tests: one counts how often each stored file is opened, one reads in short pieces."""

from collections import Counter
from typing import ClassVar

from django.core.files import File
from django.core.files.storage import FileSystemStorage

ALIAS = "counting"
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
    ALIAS: {"BACKEND": "tests.attachments.storage.CountingStorage"},
    "short_reads": {"BACKEND": "tests.attachments.storage.ShortReadStorage"},
}


class CountingStorage(FileSystemStorage):
    """The test site's MEDIA_ROOT, as the default storage; ``opened`` counts the opens of each stored name."""

    opened: ClassVar[Counter[str]] = Counter()

    def _open(self, name, mode="rb"):
        CountingStorage.opened[name] += 1
        return super()._open(name, mode)


class ShortReadFile(File):
    """A stored file whose sized reads give at most 1,000 bytes, as the streamed body of an object store may."""

    def read(self, size=-1):
        return self.file.read() if size is None or size < 0 else self.file.read(min(size, 1000))


class ShortReadStorage(FileSystemStorage):
    """The test site's MEDIA_ROOT, read in short pieces."""

    def _open(self, name, mode="rb"):
        return ShortReadFile(open(self.path(name), mode), name)  # noqa: SIM115  (closed by who opened it)
