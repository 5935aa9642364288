"""``gt.errors``: TensorFlow's exception classes and status codes (``tf.errors``).

    try:
        ...
    except gt.errors.InvalidArgumentError as e:
        print(e.message)

:class:`InvalidArgumentError` is the class gradtape's ops raise for arguments they cannot
work with (``gt.InvalidArgumentError``); it is also a ``ValueError``, as it always was in
gradtape, and now an :class:`OpError` too. The others are raised by code ported from TF
(``raise tf.errors.NotFoundError(None, None, "...")``) and by the gradtape functions that
mirror TF's failure (an empty ``gt.scan`` without an initializer raises
:class:`OutOfRangeError`).

Each class takes TensorFlow's arguments ``(node_def, op, message, *args)`` (``OpError``:
``(node_def, op, message, error_code, *args)``) or just ``(message)``; ``str(e)`` and
``e.message`` are the message, ``e.op`` and ``e.node_def`` are None in eager code, as in TF.
"""
from __future__ import annotations

from .registry import InvalidArgumentError

__all__ = ["OpError", "CancelledError", "UnknownError", "InvalidArgumentError",
           "DeadlineExceededError", "NotFoundError", "AlreadyExistsError",
           "PermissionDeniedError", "UnauthenticatedError", "ResourceExhaustedError",
           "FailedPreconditionError", "AbortedError", "OutOfRangeError", "UnimplementedError",
           "InternalError", "UnavailableError", "DataLossError",
           "OperatorNotAllowedInGraphError",
           "OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND",
           "ALREADY_EXISTS", "PERMISSION_DENIED", "UNAUTHENTICATED", "RESOURCE_EXHAUSTED",
           "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL",
           "UNAVAILABLE", "DATA_LOSS"]

# status codes (tensorflow/core/protobuf/error_codes.proto)
OK = 0
CANCELLED = 1
UNKNOWN = 2
INVALID_ARGUMENT = 3
DEADLINE_EXCEEDED = 4
NOT_FOUND = 5
ALREADY_EXISTS = 6
PERMISSION_DENIED = 7
UNAUTHENTICATED = 16
RESOURCE_EXHAUSTED = 8
FAILED_PRECONDITION = 9
ABORTED = 10
OUT_OF_RANGE = 11
UNIMPLEMENTED = 12
INTERNAL = 13
UNAVAILABLE = 14
DATA_LOSS = 15


class OpError(Exception):
    """An operation failed (``tf.errors.OpError``), the base of the classes below.

    The fields are read from the exception's arguments rather than stored by ``__init__``:
    :class:`InvalidArgumentError` is also a ``ValueError``, whose constructor comes first in
    its method order, and keeps only the arguments."""

    _code = UNKNOWN

    def _fields(self):
        """``(node_def, op, message, error_code)`` from the arguments: TF's
        ``(node_def, op, message[, error_code], ...)`` or gradtape's ``(message)``."""
        args = self.args
        if len(args) >= 3:
            code = self._code
            if type(self) is OpError and len(args) >= 4 and isinstance(args[3], int):
                code = args[3]
            return args[0], args[1], args[2], code
        return None, None, (str(args[0]) if args else ""), self._code

    @property
    def message(self) -> str:
        """The error message that describes the error."""
        return self._fields()[2]

    @property
    def op(self):
        """The operation that failed: None (gradtape runs eagerly, as TF's eager mode)."""
        return self._fields()[1]

    @property
    def node_def(self):
        """The graph node of the failed op: None in eager code."""
        return self._fields()[0]

    @property
    def error_code(self) -> int:
        """The integer status code of the error (``gt.errors.INVALID_ARGUMENT`` ...)."""
        return self._fields()[3]

    @property
    def experimental_payloads(self) -> dict:
        """Details of the error (TF's payloads): empty."""
        return {}

    def __str__(self):
        return self.message


def _subclass(name, code, doc):
    cls = type(name, (OpError,), {"_code": code, "__doc__": doc, "__module__": __name__})
    return cls


CancelledError = _subclass("CancelledError", CANCELLED, "An operation was cancelled.")
UnknownError = _subclass("UnknownError", UNKNOWN, "An unknown error.")
DeadlineExceededError = _subclass("DeadlineExceededError", DEADLINE_EXCEEDED,
                                  "A deadline expired before the operation could complete.")
NotFoundError = _subclass("NotFoundError", NOT_FOUND,
                          "A requested entity (a file, a directory) was not found.")
AlreadyExistsError = _subclass("AlreadyExistsError", ALREADY_EXISTS,
                               "An entity that was to be created already exists.")
PermissionDeniedError = _subclass("PermissionDeniedError", PERMISSION_DENIED,
                                  "The caller does not have permission to run the operation.")
UnauthenticatedError = _subclass("UnauthenticatedError", UNAUTHENTICATED,
                                 "The request does not have valid authentication credentials.")
ResourceExhaustedError = _subclass("ResourceExhaustedError", RESOURCE_EXHAUSTED,
                                   "Some resource (memory, a quota) has been exhausted.")
FailedPreconditionError = _subclass("FailedPreconditionError", FAILED_PRECONDITION,
                                    "The system is not in a state to run the operation (an "
                                    "uninitialized variable ...).")
AbortedError = _subclass("AbortedError", ABORTED, "The operation was aborted.")
OutOfRangeError = _subclass("OutOfRangeError", OUT_OF_RANGE,
                            "An operation iterated past the valid range (the end of a "
                            "sequence, an empty input).")
UnimplementedError = _subclass("UnimplementedError", UNIMPLEMENTED,
                               "The operation is not implemented or not supported.")
InternalError = _subclass("InternalError", INTERNAL, "The system hit an internal error.")
UnavailableError = _subclass("UnavailableError", UNAVAILABLE,
                             "The runtime is currently unavailable.")
DataLossError = _subclass("DataLossError", DATA_LOSS, "Unrecoverable data loss or corruption.")


class OperatorNotAllowedInGraphError(TypeError):
    """An operator is not allowed while tracing a graph (``tf.errors``); gradtape never
    traces, so it raises none of them, but code catching it keeps working."""


# gradtape's own InvalidArgumentError (registry.py: a ValueError, raised by every op) is
# TF's: it gains OpError as a second base, keeping ValueError first, so that both
# ``except ValueError`` and ``except gt.errors.OpError`` catch it.
if OpError not in InvalidArgumentError.__mro__:
    InvalidArgumentError.__bases__ = (ValueError, OpError)
InvalidArgumentError._code = INVALID_ARGUMENT
