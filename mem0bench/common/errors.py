"""The error every layer may raise for a problem the user must fix before any work."""

from __future__ import annotations


class ConfigurationError(Exception):
    """A problem the user must fix before any work (missing key, unreachable server, unknown model)."""


def leading_error(error: BaseException, prefer: tuple[type[BaseException], ...] = ()) -> BaseException:
    """The one error an `ExceptionGroup` (from a task group, possibly nested) stands for: the first leaf
    of the first type in `prefer`, else its first leaf. Anything else is returned as it is.

    A task group wraps whatever its tasks raise, so a one-line error (a ConfigurationError, a server that
    went away) would otherwise reach the user as a hundred lines of group traceback."""
    if not isinstance(error, BaseExceptionGroup):
        return error
    leaves = list(_leaves(error))
    for kind in prefer:
        for leaf in leaves:
            if isinstance(leaf, kind):
                return leaf
    return leaves[0] if leaves else error


def _leaves(group: BaseExceptionGroup[BaseException]) -> list[BaseException]:
    found: list[BaseException] = []
    for inner in group.exceptions:
        found.extend(_leaves(inner) if isinstance(inner, BaseExceptionGroup) else [inner])
    return found


def exception_line(exc: BaseException) -> str:
    """`Type: message (at file:line in function)`, the innermost frame of its traceback: one line that
    says what went wrong and where, for an exception raised by code we do not own."""
    import traceback

    text = " ".join(str(exc).split())
    head = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    frames = traceback.extract_tb(exc.__traceback__) if exc.__traceback__ is not None else []
    if not frames:
        return head
    last = frames[-1]
    return f"{head} (at {last.filename}:{last.lineno} in {last.name})"


def exception_chain(exc: BaseException) -> list[BaseException]:
    """An exception, then its causes and contexts, outermost first (each once)."""
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in seen:
        seen.append(current)
        current = current.__cause__ or current.__context__
    return seen
