"""Static files (the admin's CSS, JS and icons) served by WhiteNoise inside Django.

WhiteNoise is WSGI-era middleware: it answers with a file response whose content is a plain
iterator. Django's ASGI handler, which every HTTP request here goes through (the gateway's router
passes /static/ on to it), can only consume such an iterator by reading it whole on a thread and
warns on every response. This subclass hands ASGI requests an async iterator instead, which reads
the file a chunk at a time off the event loop; the test client's WSGI requests keep the plain one.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Iterator

from asgiref.sync import sync_to_async
from django.core.handlers.asgi import ASGIRequest
from whitenoise.middleware import WhiteNoiseMiddleware


def _next_chunk(iterator: Iterator[bytes]) -> bytes | None:
    return next(iterator, None)


async def _read_off_loop(chunks: Iterable[bytes]) -> AsyncIterator[bytes]:
    iterator = iter(chunks)
    step = sync_to_async(_next_chunk, thread_sensitive=False)
    while (part := await step(iterator)) is not None:
        yield part


class StaticFilesMiddleware(WhiteNoiseMiddleware):
    @staticmethod
    def serve(static_file, request):  # type: ignore[no-untyped-def]
        response = WhiteNoiseMiddleware.serve(static_file, request)
        if isinstance(request, ASGIRequest) and not response.is_async:
            # The file stays open until Django closes the response after the last chunk.
            response.streaming_content = _read_off_loop(response.streaming_content)
        return response
