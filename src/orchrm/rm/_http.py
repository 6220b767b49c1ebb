"""uvicorn's HTTP/1.1 protocol with a deadline on request headers.

uvicorn times out an idle keep-alive connection but not one that opens and then sends its request line and
headers slowly, or not at all: such a connection is held for as long as the client likes. Here every
request's headers must be complete within `header_timeout_s` of the connection opening (or of the previous
response); otherwise the client gets a 408 and the connection is closed. The body has its own deadline,
in the app (`json_reader`).
"""

from __future__ import annotations

import asyncio
import logging

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

log = logging.getLogger("uvicorn.error")

_TIMEOUT_BODY = b'{"detail": "request headers not received in time"}'
_TIMEOUT_RESPONSE = (
    b"HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\nconnection: close\r\n"
    b"content-length: %d\r\n\r\n%s" % (len(_TIMEOUT_BODY), _TIMEOUT_BODY)
)


def header_timeout_protocol(header_timeout_s: float) -> type[H11Protocol]:
    """An `H11Protocol` subclass for `uvicorn.Config(http=...)` that enforces `header_timeout_s`."""

    class HeaderDeadlineProtocol(H11Protocol):
        _header_timer: asyncio.TimerHandle | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._watch_headers()

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            self._watch_headers()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._watch_headers()

        def connection_lost(self, exc: Exception | None) -> None:
            self._stop_timer()
            super().connection_lost(exc)

        def _watch_headers(self) -> None:
            """Armed while the connection waits for a request's headers; stopped once they are in."""
            waiting = self.conn.their_state is h11.IDLE and not self.transport.is_closing()
            if waiting and self._header_timer is None:
                self._header_timer = self.loop.call_later(header_timeout_s, self._headers_timed_out)
            elif not waiting:
                self._stop_timer()

        def _stop_timer(self) -> None:
            if self._header_timer is not None:
                self._header_timer.cancel()
                self._header_timer = None

        def _headers_timed_out(self) -> None:
            self._header_timer = None
            if self.transport.is_closing() or self.conn.their_state is not h11.IDLE:
                return
            if self.cycle is not None and not self.cycle.response_complete:
                return  # a response is still being produced for the previous request
            client = "%s:%d" % self.client if self.client else "a client"
            log.info("%s: request headers not received within %g s; connection closed", client, header_timeout_s)
            self.transport.write(_TIMEOUT_RESPONSE)
            self.transport.close()

    return HeaderDeadlineProtocol
