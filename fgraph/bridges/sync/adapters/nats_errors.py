"""What every exception of the NATS client library means to ``fgraph sync`` (issue 48 item 1).

``MEANING`` names each exception class of ``nats.errors`` and ``nats.js.errors`` (nats-py 2.x) and
what it is to a sync: an outage to wait out (``LogUnavailable``, which publish and consume retry for
their ``retry`` bound), refused credentials or TLS, a record too large, a JetStream API answer
(sorted by its status), or a request of fgraph's the client refused (a nats-py fgraph does not
support). ``translate`` turns an exception into the typed error, by the nearest class of its MRO
that the table names, so a class a newer nats-py adds under a known base is still typed — and
tests/bridges/test_nats_errors.py fails on that version until the table names it.

The JetStream API answers by status: 503 (no leader, no quorum, JetStream starting), any 5xx and
408/409 (a pull request cut short by a leadership change) are outages, and so is err_code 10005
(no suitable peers for placement: a cluster still forming, or fewer nodes up than the replicas) and
err_code 10164 (a message of the subject still in flight on a replicated stream); 404 is ``NotFound``; 400
and others are a ``Conflict`` with the server's description. ``err_code`` 10071 (wrong last
sequence) is the caller's to judge (``NatsLog.append``), so ``translate`` leaves it alone.
"""

from __future__ import annotations

import asyncio
import ssl

from fgraph.core.errors import Conflict, FgraphError, NotFound, TooLarge, Unsupported

INSECURE_HINT = ("use a tls:// URL to a server that offers TLS, or, only on a network path you trust, "
                 "pass --insecure-plaintext-credentials")
NO_TLS_HINT = ("nothing was sent to it: check that the server runs with TLS (tls {} in its configuration) and that "
               "nothing between rewrites what it announces; a tls:// URL never falls back to plain text")

OUTAGE = "outage"              # wait, bounded: the server, the cluster or the connection will come back
CREDENTIALS = "credentials"    # the server refused who we are
TLS = "tls"                    # TLS could not be set up as asked
TOO_LARGE = "too large"        # a record over the server's max_payload
API = "api"                    # a JetStream API answer: judged by its status (``api_error``)
CLIENT = "client"              # the client refused a request fgraph built: a nats-py fgraph does not support
HANDLED = "handled"            # handled where it can occur (ack/nak of a message acknowledged before)

CALLERS_JUDGE = frozenset({10071})
# "wrong last sequence" without a sequence (JSStreamWrongLastSequenceConstantErr): a replicated
# stream's leader still has a message of the subject in flight — after a leadership change, the
# one whose acknowledgement a publisher lost — so it is an outage: the publisher resumes from the
# subject's last message and appends again (seen by tests/torture/test_nats_cluster_chaos.py)
IN_PROCESS = 10164
NO_PEERS = 10005   # "no suitable peers for placement": a forming cluster, or fewer nodes up than the replicas   # err_codes left to the caller (wrong last subject sequence)

MEANING = {
    # nats.errors ("Error" itself carries the server's -ERR lines: see ``meaning``)
    "Error": OUTAGE, "AuthorizationError": CREDENTIALS, "InvalidUserCredentialsError": CREDENTIALS,
    "BadHeaderError": CLIENT, "BadSubjectError": CLIENT, "BadSubscriptionError": CLIENT, "BadTimeoutError": CLIENT,
    "InvalidCallbackTypeError": CLIENT, "NotJSMessageError": CLIENT, "ServerNotInPoolError": OUTAGE,
    "ConnectionClosedError": OUTAGE, "ConnectionDrainingError": OUTAGE, "ConnectionReconnectingError": OUTAGE,
    "DrainTimeoutError": OUTAGE, "FlushTimeoutError": OUTAGE, "TimeoutError": OUTAGE, "NoRespondersError": OUTAGE,
    "NoServersError": OUTAGE, "OutboundBufferLimitError": OUTAGE, "SlowConsumerError": OUTAGE,
    "StaleConnectionError": OUTAGE, "UnexpectedEOF": OUTAGE, "ProtocolError": OUTAGE, "JsonParseError": OUTAGE,
    "MaxPayloadError": TOO_LARGE, "MsgAlreadyAckdError": HANDLED,
    "SecureConnFailedError": TLS, "SecureConnRequiredError": TLS, "SecureConnWantedError": TLS,
    # nats.js.errors
    "APIError": API, "BadRequestError": API, "NotFoundError": API, "ServerError": API,
    "ServiceUnavailableError": API, "ConsumerInvalidResetError": API,
    "NoStreamResponseError": OUTAGE,          # a 503 to a publish: the stream has no leader right now
    "FetchTimeoutError": OUTAGE, "ConsumerSequenceMismatchError": OUTAGE, "TooManyStalledMsgsError": OUTAGE,
    # the key-value and object stores, which fgraph never uses: a client refusal if ever met
    "BadBucketError": CLIENT, "BucketNotFoundError": CLIENT, "BadObjectMetaError": CLIENT,
    "DigestMismatchError": CLIENT, "InvalidBucketNameError": CLIENT, "InvalidKeyError": CLIENT,
    "InvalidObjectNameError": CLIENT, "KeyDeletedError": CLIENT, "KeyHistoryTooLargeError": CLIENT,
    "KeyNotFoundError": CLIENT, "KeyValueError": CLIENT, "KeyValueLimitMarkerTTLNotSupportedError": CLIENT,
    "KeyWrongLastSequenceError": CLIENT, "LinkIsABucketError": CLIENT, "NoKeysError": CLIENT,
    "ObjectAlreadyExists": CLIENT, "ObjectDeletedError": CLIENT, "ObjectNotFoundError": CLIENT,
}
MODULES = ("nats.errors", "nats.js.errors", "nats.aio.errors")

WAIT_HINT = "the sync waits for it (bounded by its retry); check the servers and that a majority of the cluster runs"
CREDENTIALS_HINT = "check FGRAPH_NATS_CREDS, FGRAPH_NATS_USER/FGRAPH_NATS_PASSWORD or FGRAPH_NATS_TOKEN"
TLS_HINT = ("a tls:// server's certificate must chain to FGRAPH_NATS_CA or a system CA; "
            "a server that requires TLS needs a tls:// URL")
CLIENT_HINT = "install the nats-py version the extra fgraph[nats] names, or report the message with your nats-py version"


def first_line(exc: BaseException) -> str:
    try:
        text = str(exc).strip().splitlines()
    except Exception:   # a client exception whose __str__ fails on the fields it was given
        text = []
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def meaning(exc: BaseException) -> str | None:
    """The ``MEANING`` of the nearest class of ``exc`` the table names (OUTAGE for a socket error or
    a timeout of the event loop), None for an exception not the client's."""
    for cls in type(exc).__mro__:
        if cls.__module__ == "nats.js.errors" and cls.__name__ == "Error":
            return CLIENT
        if cls.__module__ in MODULES and cls.__name__ in MEANING:
            if cls.__name__ == "Error" and any(word in first_line(exc).lower()
                                               for word in ("authorization", "authentication")):
                return CREDENTIALS   # the server's -ERR 'Authorization Violation'
            return MEANING[cls.__name__]
    if isinstance(exc, ssl.SSLError):
        return TLS
    if isinstance(exc, (asyncio.TimeoutError, OSError, EOFError)):
        return OUTAGE
    return None


def api_error(exc, server: str, unavailable) -> FgraphError | None:
    """A JetStream API answer as a typed error; None for the ones ``CALLERS_JUDGE``."""
    code, err_code = getattr(exc, "code", None), getattr(exc, "err_code", None)
    description = getattr(exc, "description", None) or type(exc).__name__
    if err_code in CALLERS_JUDGE:
        return None
    if err_code == IN_PROCESS:
        return unavailable(f"JetStream on {server} still replicates the subject's previous message ({description})",
                           "the publisher reads where its store stands and goes on; " + WAIT_HINT)
    if err_code == NO_PEERS:
        return unavailable(f"JetStream on {server} has not enough nodes up for the stream's replicas ({description})",
                           "start the cluster's other nodes, or create the stream with fewer --replicas; " + WAIT_HINT)
    if code is None or code == 503 or code >= 500 or code in (408, 409):
        return unavailable(f"JetStream on {server} cannot answer now ({description})",
                           "wait for the cluster to elect a leader; " + WAIT_HINT)
    if code == 404:
        return NotFound(f"JetStream on {server}: {description}", "check the stream name of the URL")
    return Conflict(f"JetStream on {server} refused a request of fgraph sync: {description} "
                    f"(status {code}, error {err_code})",
                    "check the stream's configuration (nats stream info) against docs/replication.md")


def translate(exc: BaseException, server: str, unavailable) -> FgraphError | None:
    """The typed error ``exc`` of the client library stands for (``unavailable`` builds the outage
    error, ``LogUnavailable``); None when it is not the client's or is the caller's to judge."""
    kind = meaning(exc)
    if kind is None:
        return None
    if kind in (OUTAGE, HANDLED):
        return unavailable(f"NATS server {server} is unavailable ({first_line(exc)})".rstrip(), WAIT_HINT)
    if kind == CREDENTIALS:
        return Unsupported(f"NATS server {server} refused the credentials ({first_line(exc)})", CREDENTIALS_HINT)
    if kind == TLS:
        return Unsupported(f"TLS with NATS server {server} failed ({first_line(exc)})", TLS_HINT)
    if kind == TOO_LARGE:
        return TooLarge(f"an event is larger than the max_payload of {server}",
                        "raise max_payload in the server's configuration (events reach 8,454,144 bytes)")
    if kind == API:
        return api_error(exc, server, unavailable)
    return Unsupported(f"the NATS client refused a request of fgraph sync ({first_line(exc)})", CLIENT_HINT)


UNREACHABLE_HINT = "check the host and port and that the server runs with JetStream (nats-server -js)"


def connect_failure(exc: BaseException, seen: list, refusal, server: str, unavailable) -> FgraphError:
    """Why no server of the URL took the connection: the guard's ``refusal`` (nats_tls), refused
    credentials or TLS among the errors the client reported (``seen``), or none answering."""
    if refusal is not None:
        return refusal
    for error in reversed(seen):
        typed = translate(error, server, unavailable)
        if typed is not None and not isinstance(typed, unavailable):   # credentials, TLS
            return typed
    return NotFound(f"NATS server {server} is unreachable ({type(exc).__name__})", UNREACHABLE_HINT)


def guard_refusal(refused: list, server: str) -> Unsupported | None:
    """The error for the last server the TLS and credentials guard refused (``nats_tls``), None when none was."""
    if not refused:
        return None
    reason = refused[-1].reason
    if "TLS" in reason:
        return Unsupported(f"TLS with NATS server {server} failed ({reason})", NO_TLS_HINT)
    return Unsupported(f"NATS server {server}: {reason}, so nothing was sent", INSECURE_HINT)
