"""Record and replay real provider HTTP traffic, built on vcrpy.

The parts, one job each: :mod:`.files` reads every accepted file shape (vcrpy YAML,
pydantic-ai's ``parsed_body`` dialect, HAR 1.2) and writes readable YAML; :mod:`.redaction` keeps
secrets out of files (by name, by shape, by value); :mod:`.matching` decides which recorded
interaction answers a request; :mod:`.session` is the open cassette (``use_cassette``);
:mod:`.vcr_internals` holds every use of vcrpy's private parts.  vcrpy and PyYAML are imported
only when a cassette is opened or loaded.  The package loads its names on first use
(as the front door does), so reading the record modes (:mod:`.modes`) costs nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_names

if TYPE_CHECKING:
    from .errors import CassetteError as CassetteError
    from .errors import CassetteLeakError as CassetteLeakError
    from .errors import CassetteMismatch as CassetteMismatch
    from .errors import ScriptExhaustedWarning as ScriptExhaustedWarning
    from .files import EXPECTED_SHAPES as EXPECTED_SHAPES
    from .files import load_interactions as load_interactions
    from .matching import NORMALISATIONS as NORMALISATIONS
    from .matching import first_json_difference as first_json_difference
    from .modes import RECORD_MODES as RECORD_MODES
    from .modes import RecordMode as RecordMode
    from .redaction import DEFAULT_SECRET_FIELDS as DEFAULT_SECRET_FIELDS
    from .redaction import DEFAULT_SECRET_HEADERS as DEFAULT_SECRET_HEADERS
    from .redaction import DEFAULT_SECRET_QUERY_PARAMS as DEFAULT_SECRET_QUERY_PARAMS
    from .redaction import REDACTED as REDACTED
    from .redaction import RedactionRules as RedactionRules
    from .redaction import Redactor as Redactor
    from .redaction import find_leak as find_leak
    from .redaction import redact_text as redact_text
    from .session import CassetteSession as CassetteSession
    from .session import MutationSpec as MutationSpec
    from .session import use_cassette as use_cassette

_EXPORTS: dict[str, str] = {
    "CassetteError": "errors",
    "CassetteLeakError": "errors",
    "CassetteMismatch": "errors",
    "CassetteSession": "session",
    "DEFAULT_SECRET_FIELDS": "redaction",
    "DEFAULT_SECRET_HEADERS": "redaction",
    "DEFAULT_SECRET_QUERY_PARAMS": "redaction",
    "EXPECTED_SHAPES": "files",
    "MutationSpec": "session",
    "NORMALISATIONS": "matching",
    "RECORD_MODES": "modes",
    "REDACTED": "redaction",
    "RecordMode": "modes",
    "RedactionRules": "redaction",
    "Redactor": "redaction",
    "ScriptExhaustedWarning": "errors",
    "find_leak": "redaction",
    "first_json_difference": "matching",
    "load_interactions": "files",
    "redact_text": "redaction",
    "use_cassette": "session",
}
"""Where each name lives (module under this package)."""


__getattr__, __dir__ = lazy_names(__name__, _EXPORTS)

__all__ = sorted(_EXPORTS)
