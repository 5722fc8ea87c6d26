"""Errors answered in OpenAI's shape: ``{"error": {"message", "type", "param", "code"}}``."""
import json

from starlette.responses import Response


class APIError(Exception):
    """An error answered as OpenAI does: ``{"error": {"message", "type", "param", "code"}}``."""

    def __init__(self, status, message, *, type="invalid_request_error", param=None, code=None):
        super().__init__(message)
        self.status, self.message, self.type, self.param, self.code = status, message, type, param, code

    def body(self):
        """The OpenAI error object, ``{"error": {...}}``."""
        return {"error": {"message": self.message, "type": self.type, "param": self.param, "code": self.code}}

    def response(self):
        """This error as a JSON response with its HTTP status (ASCII JSON: a lone surrogate that a message quotes
        from the request is escaped, not an encoding error)."""
        return Response(json.dumps(self.body()).encode("ascii"), status_code=self.status,
                        media_type="application/json")


def internal_error(exc):
    """The APIError (500, ``server_error``) answering an unexpected exception."""
    return APIError(500, f"internal error: {type(exc).__name__}: {short(str(exc), 300)}", type="server_error")


def short(text, limit=60):
    """text, cut to ``limit`` characters with "..." (values quoted back in error messages)."""
    return text if len(text) <= limit else text[:limit] + "..."
