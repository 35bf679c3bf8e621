"""The open cassette: record or replay the HTTP traffic of a ``with`` block.

``use_cassette(path)`` patches the HTTP clients the official SDKs use (vcrpy patches ``httpx``,
``httpx2``, botocore's urllib3 connections and ``requests``) so requests are answered from a
cassette file (:mod:`.files` lists the shapes accepted):

- **Record modes** ``none`` (default: replay only; an unmatched request fails at once with a
  message saying why, nothing reaches the network), ``once``, ``new_episodes``, ``all`` (vcrpy's
  meanings).  Recording needs ``openprogram.providers.guard`` to allow real requests.
- **In-order playback**: the first *unplayed* matching interaction is served, so identical
  retried requests get their recorded 429 → 529 → 200 sequence (:mod:`.matching` says what
  matches).  Interactions left unplayed fail at exit unless ``allow_unplayed=True``.
- **Secrets never reach a file** (:mod:`.redaction`); the cassette is scanned before it is
  written and a leak fails the recording with nothing written.
- **Fault mutations** (:mod:`transport.faults`) apply at playback to the recorded
  bodies (gzip is decoded first).
- **Answers the emulator made up** (past the end of its script, marked with the response header
  ``x-emulator-script-exhausted: true``) raise a :class:`ScriptExhaustedWarning` when the
  ``with`` block of a recording session ends.
"""

from __future__ import annotations

import contextlib
import copy
import gzip
import os
import time
import warnings
import zlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from openprogram.providers import guard
from openprogram_testing.base.recording import (
    CASSETTE,
    FAULT,
    HttpExchange,
    annotate,
    announce_exchange,
    current_run,
    exchanges_wanted,
)
from openprogram_testing.transport.faults import (
    FAULT_KINDS,
    FaultError,
    MutableResponse,
    Mutation,
    apply_mutations,
)
from openprogram_testing.transport.wire.base import EXHAUSTED_HEADER

from . import vcr_internals
from .errors import CassetteError, CassetteLeakError, ScriptExhaustedWarning
from .fallback import ScriptFallback
from .files import Serializer, decoded_body, headers_as_lists
from .matching import MISSING, ROUTE_MATCHERS, BodyMatch, ListLength, requests_match, show
from .modes import RECORD_MODES, RecordMode
from .redaction import RedactionRules, Redactor

if TYPE_CHECKING:
    from .fallback import ScriptFallback

__all__ = [
    "RECORD_MODES",
    "CassetteSession",
    "MutationSpec",
    "RecordMode",
    "recorded_response",
    "use_cassette",
]


MutationSpec = Sequence[Mutation] | Mapping[int, Sequence[Mutation]]


_AUTO_SINCE_0_2 = (
    ' (Since 0.2.0 a YAML scenario without options.tool_choice sends "auto", as Runtime.exec '
    "does; for a recording made without one, write options: {tool_choice: null} in the scenario.)"
)
"""The one body difference a 0.1 recording shows by itself: named with its migration."""


class CassetteSession:
    """An open cassette (what ``use_cassette`` yields and the ``cassette`` fixture returns):
    replays (or records) the HTTP traffic inside the ``with`` block from the cassette at
    ``path`` (``.yaml`` added when there is no suffix; ``.har`` files replay only).

    ``match_body`` (default on): a model call (a request to a wire API's endpoint) matches a
    recorded one only if its JSON body does too, after the normalisations of
    :data:`~.matching.NORMALISATIONS` and without the places ``ignore_paths`` names (JSON paths
    as the mismatch message prints them: ``["$.metadata", "$.tools[*].description"]``).  Turn it
    off for recordings whose bodies another client made.

    ``mutations`` is a list of :mod:`transport.faults` mutations applied to every
    played response, or ``{interaction_index: [mutations]}`` to address single interactions.
    ``redact_values`` are extra secret values to keep out of the file; ``redact_headers``,
    ``redact_query_params`` and ``redact_fields`` add credential names (glob patterns) to the
    defaults, ``redaction`` replaces the default rules altogether.

    ``fallback`` (replay only; off by default): scripted turns (what ``ScriptedProvider`` and the
    emulator take) that answer, in order, the requests the cassette holds no answer for (after a
    fault or any drift) instead of failing them; each such answer is marked on the traced run
    and listed in ``served_from_script``, and fallback turns left unused fail at exit (a
    fallback never used always: it tested nothing).

    ``interactions`` is the number of interactions, ``played`` the indices served in order,
    ``mismatches`` the messages of requests that matched nothing."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        record_mode: str = "none",
        match_body: bool = True,
        ignore_paths: Sequence[str] = (),
        allow_unplayed: bool = False,
        mutations: MutationSpec = (),
        redact_values: Sequence[str] = (),
        redaction: RedactionRules | None = None,
        redact_headers: Sequence[str] = (),
        redact_query_params: Sequence[str] = (),
        redact_fields: Sequence[str] = (),
        fallback: Sequence[Any] = (),
    ) -> None:
        if record_mode not in RECORD_MODES:
            raise CassetteError(
                f"record_mode must be one of {', '.join(RECORD_MODES)}; got {record_mode!r}"
            )
        self.path = Path(path)
        if not self.path.suffix:
            self.path = self.path.with_suffix(".yaml")
        if self.path.suffix.lower() == ".har" and record_mode != "none":
            raise CassetteError(
                f"{self.path}: HAR files are replayed, never recorded into; record into a "
                ".yaml cassette (record_mode must be 'none' here)"
            )
        self.record_mode = record_mode
        self.match_body = bool(match_body)
        self.body_match = BodyMatch(ignore_paths)
        self.allow_unplayed = allow_unplayed
        self.mutations = _check_mutations(mutations)
        if redaction is not None and not isinstance(redaction, RedactionRules):
            raise CassetteError(f"redaction must be a RedactionRules; got {redaction!r}")
        try:
            rules = (redaction or RedactionRules()).extended(
                headers=redact_headers, query_params=redact_query_params, body_fields=redact_fields
            )
        except TypeError as exc:
            raise CassetteError(f"redaction names: {exc}") from None
        self.redactor = Redactor(rules, [v for v in redact_values if isinstance(v, str) and v])
        self.played: list[int] = []
        self.mismatches: list[str] = []
        self._fallback = _script_fallback(fallback, record_mode)
        self.loading = False
        self._recorded = 0
        self._exhausted: list[str] = []
        self._vcr_cassette: Any = None
        self._stack: contextlib.ExitStack | None = None

    # ---- public views
    @property
    def interactions(self) -> int:
        return len(self._vcr_cassette.data) if self._vcr_cassette is not None else 0

    def rewind(self, *, mutations: MutationSpec | None = None) -> None:
        """Mark every interaction unplayed again (and optionally swap the mutations), so one
        open cassette can replay the same recording many times: cheaper than reopening it, e.g.
        when sweeping a fault over every frame."""
        if self._vcr_cassette is None:
            raise CassetteError("rewind() needs an open cassette (inside `with use_cassette(...)`)")
        if mutations is not None:
            self.mutations = _check_mutations(mutations)
        self._vcr_cassette.rewind()
        self.played.clear()
        self.mismatches.clear()

    @property
    def unplayed(self) -> list[int]:
        if self._vcr_cassette is None:
            return []
        counts = vcr_internals.play_counts(self._vcr_cassette)
        return [i for i in range(vcr_internals.loaded_count(self._vcr_cassette)) if not counts[i]]

    @property
    def served_from_script(self) -> list[str]:
        """One line per request the fallback script answered (what was asked, which turn)."""
        return list(self._fallback.served) if self._fallback is not None else []

    @property
    def replay_only(self) -> bool:
        """Whether every request must come from the file (nothing may be recorded)."""
        return bool(self._vcr_cassette is not None and self._vcr_cassette.write_protected)

    # ---- context management
    def __enter__(self) -> CassetteSession:
        from vcr.record_mode import RecordMode as VcrRecordMode

        if self.record_mode == "none" and not self.path.is_file():
            raise CassetteError(
                f"cassette {self.path} not found and record_mode='none' never records. Record it "
                "once against the real API or the emulator with record_mode='once' (pytest: "
                "--openprogram-record-mode=once)."
            )
        vcr_internals.install_playback_hook()
        cls = vcr_internals.make_cassette_class(self)
        body = [self.body_match.matcher()] if self.match_body else []
        match_on = [*ROUTE_MATCHERS, *body]
        context = cls.use(
            path=str(self.path),
            serializer=Serializer(self.path, self._scan_for_leaks),
            record_mode=VcrRecordMode(self.record_mode),
            match_on=match_on,
            before_record_request=self._before_record_request,
            before_record_response=self._before_record_response,
            allow_playback_repeats=False,
        )
        self._stack = contextlib.ExitStack()
        try:
            self._vcr_cassette = self._stack.enter_context(context)
            self._enter_guard()
        except BaseException:
            self._stack.close()
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        assert self._stack is not None
        try:
            vcr_internals.save(self._vcr_cassette)  # recording modes; a leak raises here
        except BaseException:
            self._stack.close()
            raise
        self._stack.close()  # unpatches
        if self._exhausted:
            warnings.warn(
                ScriptExhaustedWarning(
                    f"cassette {self.path} recorded {len(self._exhausted)} answer(s) the "
                    "provider emulator gave after its script ran out (response header "
                    f"x-emulator-script-exhausted: true): {'; '.join(self._exhausted)}. They "
                    "are the emulator's fallback, not a real provider's answers; give the "
                    "emulator more turns or re-record against the real API."
                ),
                stacklevel=2,
            )
        if exc_type is not None:
            if self.mismatches and exc is not None and not isinstance(exc, CassetteError):
                exc.add_note(f"(cassette) a request could not be answered: {self.mismatches[0]}")
            return
        if self.mismatches:
            raise CassetteError(
                "a request could not be answered from the cassette (the error was caught by "
                "the code under test):\n" + self.mismatches[0]
            )
        if self.record_mode != "all" and not self.allow_unplayed and self.unplayed:
            raise CassetteError(self._explain_unplayed())
        if self._fallback is not None:
            self._check_fallback()

    def _enter_guard(self) -> None:
        """Let real adapters through the real-call guard while requests are answered from the
        cassette (and, when recording, for the real requests)."""

        assert self._stack is not None
        self._stack.enter_context(guard.replaying())

    # ---- recording hooks (vcrpy also runs the request hook on every request it matches)
    def _before_record_request(self, request: Any) -> Any:
        request = copy.copy(request)  # the caller's request stays as it is
        request.headers = self.redactor.headers(dict(request.headers.items()))
        request.uri = self.redactor.uri(request.uri)
        redacted = self._redacted_body(request.body)
        if redacted is not None:
            request.body = redacted
        return request

    def _redacted_body(self, body: Any) -> str | None:
        """A recorded body's text with its secrets redacted, or ``None`` when that changes
        nothing (no secret in it, or not UTF-8 text): only a changed body is written back, so
        every other body is recorded byte for byte."""
        if not isinstance(body, bytes) or not body:
            return None
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError:
            return None
        redacted = self.redactor.body(text)
        return redacted if redacted != text else None

    def _before_record_response(self, response: dict[str, Any]) -> dict[str, Any]:
        if self.loading:
            return response  # recordings are served as they are
        from vcr.filters import decode_response

        response["headers"] = headers_as_lists(response.get("headers") or {})
        response = decode_response(response)
        response["headers"] = self.redactor.headers(response.get("headers") or {})
        redacted = self._redacted_body(response.get("body", {}).get("string"))
        if redacted is not None:
            response["body"]["string"] = redacted.encode("utf-8")
            for name in response["headers"]:
                if name.lower() == "content-length":
                    response["headers"][name] = [str(len(response["body"]["string"]))]
        self._recorded += 1
        for name, values in response["headers"].items():
            if name.lower() == EXHAUSTED_HEADER and any(v.strip() == "true" for v in values):
                code = response.get("status", {}).get("code")
                self._exhausted.append(f"#{self.interactions} (status {code})")
        return response

    def _scan_for_leaks(self, data: dict[str, Any]) -> None:
        """Refuse to write a secret: every interaction recorded in this session is checked for
        credential-named headers, parameters and fields, key shapes and every value redacted
        anywhere in the session.  (Interactions loaded from the file are written back as
        they were: they are on disk already.)"""
        interactions = data.get("interactions", [])
        first_new = max(0, len(interactions) - self._recorded)
        for index in range(first_new, len(interactions)):
            interaction = interactions[index]
            for side in ("request", "response"):
                part = interaction.get(side, {})
                places: list[tuple[str, str | None, bool]] = []
                if side == "request":
                    places.append(("uri", str(part.get("uri")), True))
                    places.append(("body", decoded_body(part.get("body")), False))
                else:
                    body = part.get("body", {})
                    places.append(("body", decoded_body(body.get("string")), False))
                for name, values in (part.get("headers") or {}).items():
                    if self.redactor.rules.is_secret_header(str(name)):
                        raise CassetteLeakError(
                            f"refusing to write {self.path}: interaction {index} {side} still "
                            f"has the credential header {name!r}"
                        )
                    for value in values if isinstance(values, list) else [values]:
                        places.append((f"header {name}", decoded_body(value), False))
                for where, text, is_uri in places:
                    if text is None:
                        continue
                    leak = (
                        self.redactor.leak_in_uri(text) if is_uri else self.redactor.leak_in(text)
                    )
                    if leak:
                        raise CassetteLeakError(
                            f"refusing to write {self.path}: interaction {index} {side} {where} "
                            f"contains {leak}. Nothing was written; pass the value in "
                            "redact_values=[...] (or its name in redact_fields / "
                            "redact_headers / redact_query_params) or report the shape as a "
                            "redaction bug."
                        )

    # ---- playback (called by the cassette class for every client)
    def serve(self, index: int, recorded: dict[str, Any], uri: str) -> dict[str, Any]:
        """The response to send for interaction ``index``: the recording with this session's
        mutations applied, as vcrpy's response dict plus ``_pieces`` (delays and bytes) and
        ``_disconnect`` for the httpx stream."""
        self.played.append(index)
        mutations = self._mutations_for(index)
        response = recorded_response(recorded, uri, decoded=bool(mutations))
        if mutations:
            try:
                apply_mutations(response, mutations)
            except FaultError as exc:
                error = CassetteError(f"cassette {self.path}, interaction {index}: {exc}")
                self.mismatches.append(str(error))
                raise error from None
        pieces = response.pieces() if mutations else [(0.0, response.body_bytes())]
        _annotate(index, uri, response.status, mutations)
        sent = b"".join(chunk for _, chunk in pieces)
        if exchanges_wanted():  # the HTML report shows the traffic of any client
            self._announce(index, uri, response, sent)
        return {
            "status": {"code": response.status, "message": response.reason},
            "headers": response.headers,
            "body": {"string": sent},
            "_pieces": pieces,
            "_disconnect": response.disconnect,
        }

    def _announce(self, index: int, uri: str, response: MutableResponse, sent: bytes) -> None:
        """The exchange played: the recorded request that matched and the answer sent."""
        recorded: Any = None
        with contextlib.suppress(AttributeError, IndexError, TypeError):
            recorded = self._vcr_cassette.data[index][0]
        announce_exchange(
            HttpExchange(
                "cassette",
                index,
                str(getattr(recorded, "method", "POST")),
                uri,
                time.monotonic(),
                dict(getattr(recorded, "headers", None) or {}),
                getattr(recorded, "body", None),
                response.status,
                response.headers,
                sent,
            )
        )

    def can_fall_back(self) -> bool:
        return self._fallback is not None and self._fallback.remaining > 0

    def fall_back(self, request: Any) -> dict[str, Any] | None:
        """The fallback script's answer to a request nothing unplayed in the cassette matches
        (``None`` without a fallback turn left: the request is then a mismatch as ever)."""
        if self._fallback is None or self._fallback.remaining <= 0:
            return None
        return self._fallback.serve(request, self.explain_mismatch(request))

    def _check_fallback(self) -> None:
        fallback = self._fallback
        assert fallback is not None
        if not fallback.served:
            raise CassetteError(
                f"cassette {self.path}: the fallback script ({fallback.total} turn(s)) answered "
                "nothing: every request was in the cassette, so the run never left the "
                "recording. Remove the fallback, or make the fault or change it was there for "
                "reach the model calls."
            )
        problem = fallback.problem()
        if problem is not None and not self.allow_unplayed:
            raise CassetteError(f"cassette {self.path}: {problem}")

    def note_mismatch(self, message: str) -> None:
        self.mismatches.append(message)

    def _mutations_for(self, index: int) -> list[Mutation]:
        if isinstance(self.mutations, Mapping):
            return list(self.mutations.get(index, ()))
        return list(self.mutations)

    # ---- messages
    def _describe(self, index: int) -> str:
        request, response = self._vcr_cassette.data[index]
        code = response.get("status", {}).get("code") if isinstance(response, dict) else "?"
        return f"#{index} {request.method} {request.uri} -> {code}"

    def explain_mismatch(self, request: Any) -> str:
        cassette = self._vcr_cassette
        if cassette is None:  # pragma: no cover - only during loading
            return f"cassette {self.path}: no match for {request.method} {request.uri}"
        request = self._before_record_request(request)

        run = current_run()
        head = (
            f"cassette {self.path} (record_mode={self.record_mode!r}) has no unplayed "
            f"interaction for {request.method} {request.uri}"
            + (f" (a model call of {run})" if run is not None else "")
        )
        if self.mismatches:
            # A request made after an earlier one failed (the caller's retry, or what the code
            # did with that failure) is compared with the interaction the failed one left
            # unplayed: its difference and hint would mislead. Lead with the first difference.
            where = f", a model call of {run}," if run is not None else ""
            return (
                f"{self.mismatches[0]}\n(Then {request.method} {request.uri}{where} made after "
                "that failure, was refused too: it is compared with what the failed request "
                "left unplayed, so fix the first difference.)"
            )
        route = [
            i for i, (stored, _) in enumerate(cassette.data) if requests_match(request, stored)
        ]
        counts = vcr_internals.play_counts(cassette)
        unplayed = [i for i in route if not counts[i]]
        if unplayed and self.match_body:
            index = unplayed[0]
            stored = cassette.data[index][0]
            found = self.body_match.difference(request.path, stored.body, request.body)
            relax = (
                "If that part of the body legitimately differs between runs, leave it out of "
                "the comparison (ignore_paths=[...]) or turn body matching off for this "
                "cassette (match_body=False); if the test changed what it asks, re-record."
            )
            if found is None or found[1] == "<not JSON>":
                return (
                    f"{head}: the body differs from interaction {index} (the next unplayed "
                    f"one for this route; bodies are not JSON). {relax}"
                )
            where, old, new = found
            if isinstance(old, ListLength) and isinstance(new, ListLength):
                # Items added or removed: only the whole list can be left out (an item's path
                # is blanked, not removed, so the lengths would still differ).
                change = "grew" if new.length > old.length else "shrank"
                return (
                    f"{head}: the body differs from interaction {index} (the next unplayed one "
                    f"for this route) at {where}: the list {change} from {old.length} to "
                    f"{new.length} item(s){_where_items(old, new)}. "
                    + relax.replace(
                        "ignore_paths=[...]",
                        f"ignore_paths=[{where!r}], the whole list: items cannot be left out "
                        "one by one when their number differs",
                    )
                )
            return (
                f"{head}: the body differs from interaction {index} (the next unplayed one "
                f"for this route) at {where}: recorded {show(old)}, got {show(new)}. "
                + relax.replace("ignore_paths=[...]", f"ignore_paths=[{where!r}]")
                + (
                    _AUTO_SINCE_0_2
                    if (where, old, new) == ("$.tool_choice", MISSING, "auto")
                    else ""
                )
            )
        if route:
            return (
                f"{head}: all {len(route)} recorded interaction(s) for this route were already "
                f"played ({', '.join(f'#{i}' for i in route)}); the code made more requests "
                "than were recorded. Re-record with record_mode='all' if the behaviour changed."
            )
        recorded = "\n".join(f"  {self._describe(i)}" for i in range(len(cassette.data)))
        return (
            f"{head}: nothing in it has this method + host + path. Recorded:\n"
            + (recorded or "  (no interactions)")
            + "\nNo request reaches the network while replaying."
        )

    def _explain_unplayed(self) -> str:
        unplayed = self.unplayed
        total = vcr_internals.loaded_count(self._vcr_cassette)
        lines = "\n".join(f"  {self._describe(i)}" for i in unplayed)
        return (
            f"cassette {self.path}: {len(unplayed)} of {total} recorded interaction(s) were "
            f"never played:\n{lines}\nThe code made fewer requests than were recorded. Pass "
            "allow_unplayed=True (pytest: @pytest.mark.op_cassette(..., allow_unplayed=True)) "
            "if that is expected."
        )


def _where_items(old: ListLength, new: ListLength) -> str:
    """Where the added (or removed) items are, when the rest of the list is equal."""
    extra, verb = (new.extra, "added") if new.length > old.length else (old.extra, "removed")
    if extra is None or not len(extra):
        return " (and other items differ too)"
    first, last = extra[0], extra[-1]
    at = f"[{first}]" if first == last else f"[{first}..{last}]"
    side = "this request" if verb == "added" else "the recording"
    return f" ({verb}: {at} of {side})"


def _script_fallback(turns: Sequence[Any], record_mode: str) -> ScriptFallback | None:
    """The ``ScriptFallback`` of ``fallback=`` turns (``None`` for none); refused when
    recording, where a request the cassette lacks is recorded, not made up."""
    if isinstance(turns, str | bytes) or not isinstance(turns, Sequence):
        raise CassetteError(f"fallback is a list of scripted turns; got {turns!r}")
    if not turns:
        return None
    if record_mode != "none":
        raise CassetteError(
            "fallback= answers requests a replayed cassette does not hold; it cannot be "
            f"combined with recording (record_mode={record_mode!r}; use 'none')"
        )

    try:
        return ScriptFallback(turns)
    except (TypeError, ValueError) as exc:
        raise CassetteError(f"fallback: {exc}") from None


def _annotate(index: int, uri: str, status: int, mutations: list[Mutation]) -> None:
    """Tell the run being traced (if any) which interaction answered and which faults hit it,
    so the timeline and the HTML report mark them at the model call they belong to."""

    annotate(CASSETTE, f"interaction {index}: {uri} -> HTTP {status}")
    for mutation in mutations:
        annotate(FAULT, f"{mutation!r} on interaction {index}")


def recorded_response(recorded: Mapping[str, Any], uri: str, *, decoded: bool) -> MutableResponse:
    """The recorded response (vcrpy's response dict) as a ``MutableResponse`` for ``uri``;
    ``decoded``: its body decompressed and, when it is UTF-8, text, as the mutations read it.
    The one construction for replay (``serve``) and for checking a fault against a recording
    before any run (``scenarios.checks``)."""
    body = (recorded.get("body") or {}).get("string")
    if body is None:
        body = b""
    if isinstance(body, str):
        body = body.encode("utf-8")
    status = recorded.get("status") or {}
    response = MutableResponse(
        status=int(status.get("code") or 200),
        reason=str(status.get("message") or ""),
        headers=headers_as_lists(recorded.get("headers") or {}),
        body=body,
        path=urlsplit(uri).path,
    )
    if decoded:
        _decompress(response)
        with contextlib.suppress(UnicodeDecodeError):
            response.body = response.body_bytes().decode("utf-8")
    return response


def _decompress(response: MutableResponse) -> None:
    encoding = (response.header("content-encoding") or "").lower().strip()
    data = response.body_bytes()
    if encoding in ("gzip", "x-gzip") or data[:2] == b"\x1f\x8b":
        try:
            response.body = gzip.decompress(data)
        except (OSError, EOFError) as exc:
            raise CassetteError(f"a gzip body could not be decompressed: {exc}") from None
    elif encoding == "deflate":
        try:
            response.body = zlib.decompress(data)
        except zlib.error:
            try:
                response.body = zlib.decompress(data, -zlib.MAX_WBITS)
            except zlib.error as exc:
                raise CassetteError(f"a deflate body could not be decompressed: {exc}") from None
    elif encoding:
        return
    response.set_header("content-encoding", None)
    if response.header("content-length") is not None:
        response.set_header("content-length", str(len(response.body_bytes())))


def _check_mutations(mutations: MutationSpec) -> MutationSpec:
    items: list[Any]
    if isinstance(mutations, Mapping):
        for key in mutations:
            if not isinstance(key, int) or key < 0:
                raise CassetteError(f"mutations keys are 0-based interaction indices; got {key!r}")
        items = [m for ms in mutations.values() for m in ms]
    else:
        items = list(mutations)
    for mutation in items:
        if not isinstance(mutation, Mutation):
            kinds = ", ".join(f"Fault.{name}" for name in FAULT_KINDS)
            raise CassetteError(f"{mutation!r} is not a fault mutation; build one with {kinds}")
    return mutations if isinstance(mutations, Mapping) else list(items)


use_cassette = CassetteSession
"""``with use_cassette(path, ...) as cassette:``: the session is its own context manager, so
opening a cassette is constructing one (one parameter list, documented on the class)."""
