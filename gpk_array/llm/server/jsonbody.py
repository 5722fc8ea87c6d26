"""Request bodies: read up to a byte limit (beyond: 413), parsed as the JSON object OpenAI takes (anything else:
400 ``invalid_json``)."""
import json
import math

from starlette.requests import ClientDisconnect

from .errors import APIError, short

# The largest request body read (larger: 413). 64 prompts of a full GPT-2 context fit with room to spare.
DEFAULT_MAX_BODY_BYTES = 4 << 20


def json_type(v):
    """The JSON type name of a parsed value ("integer", "string", ...), for error messages."""
    return {bool: "boolean", int: "integer", float: "number", str: "string", list: "array", dict: "object",
            type(None): "null"}.get(type(v), type(v).__name__)


class _NotJSON(ValueError):
    pass


def _no_constant(name):
    raise _NotJSON(f"{name} is not a JSON value (JSON has no NaN or Infinity)")


def _finite_float(text):
    v = float(text)
    if not math.isfinite(v):
        raise _NotJSON(f"the number {short(text, 30)} is out of range")
    return v


def parse_json(raw):
    """The JSON object of a request body (bytes), as OpenAI takes it; APIError 400 for anything else: not UTF-8,
    not JSON, NaN / Infinity / numbers beyond a float, integers of more digits than Python converts, nesting
    deeper than the parser recurses, a value other than an object."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise APIError(400, f"the request body is not UTF-8 (byte {e.start}: {e.reason})",
                       code="invalid_json") from None
    try:
        body = json.loads(text, parse_constant=_no_constant, parse_float=_finite_float)
    except RecursionError:
        raise APIError(400, "the JSON body of your request is nested too deeply", code="invalid_json") from None
    except _NotJSON as e:
        raise APIError(400, f"the JSON body of your request is not valid: {e}", code="invalid_json") from None
    except ValueError as e:  # JSONDecodeError; an integer of more digits than int() takes
        raise APIError(400, f"we could not parse the JSON body of your request ({short(str(e), 200)})",
                       code="invalid_json") from None
    if not isinstance(body, dict):
        raise APIError(400, f"the request body must be a JSON object, got {json_type(body)}", code="invalid_json")
    return body


async def read_json(request, max_bytes):
    """The JSON object of a request's body, read up to ``max_bytes`` bytes (beyond: APIError 413, as soon as the
    Content-Length says so or the bytes read pass the limit)."""
    def too_large():
        return APIError(413, f"the request body is larger than the {max_bytes} bytes this server takes",
                        code="request_too_large")
    length = request.headers.get("content-length", "")
    if length.isdigit() and (len(length) > 18 or int(length) > max_bytes):
        raise too_large()
    chunks, size = [], 0
    try:
        async for chunk in request.stream():
            size += len(chunk)
            if size > max_bytes:
                raise too_large()
            chunks.append(chunk)
    except ClientDisconnect:
        raise APIError(400, "the client disconnected before sending the whole body") from None
    return parse_json(b"".join(chunks))
