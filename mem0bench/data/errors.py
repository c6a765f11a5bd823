"""The one error type of the data layer: a problem with a dataset file, said in one line."""

from __future__ import annotations

from mem0bench.common.text import one_line


class DatasetError(Exception):
    """A dataset file is missing, unreadable, malformed, or cannot be downloaded.

    Attributes:
        file: the file concerned, as the user named it (or a URL for download problems); may be None.
        sample: the sample's ``sample_id``, or its index in the file (an int, shown as ``#<index>``) when
            it has none; None when the problem is not about one sample.
        field: the path of the offending field inside the sample, e.g. ``qa[12].question``; may be None.
        message: what is wrong, without the location.

    ``str()`` gives one line, from the outside in, e.g.
    ``locomo10.json: sample conv-26: qa[12].question: missing field 'question'``.
    """

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        sample: str | int | None = None,
        field: str | None = None,
    ) -> None:
        self.file = file
        self.sample = sample
        self.field = field
        self.message = message
        super().__init__(str(self))

    def __str__(self) -> str:
        parts: list[str] = []
        if self.file:
            parts.append(self.file)
        if isinstance(self.sample, int):
            parts.append(f"sample #{self.sample}")
        elif self.sample is not None:
            parts.append(f"sample {self.sample}")
        if self.field:
            parts.append(self.field)
        parts.append(one_line(self.message))
        return ": ".join(parts)

    def __reduce__(self):  # keep the keyword-only fields when pickled (e.g. across processes)
        return (_rebuild, (self.message, self.file, self.sample, self.field))


def _rebuild(message: str, file: str | None, sample: str | int | None, field: str | None) -> DatasetError:
    return DatasetError(message, file=file, sample=sample, field=field)
