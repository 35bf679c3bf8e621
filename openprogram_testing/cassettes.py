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

from ._lazy import lazy_names

if TYPE_CHECKING:
    from .transport.cassettes.errors import CassetteError as CassetteError
    from .transport.cassettes.errors import (
        CassetteLeakError as CassetteLeakError,
    )
    from .transport.cassettes.errors import CassetteMismatch as CassetteMismatch
    from .transport.cassettes.errors import (
        ScriptExhaustedWarning as ScriptExhaustedWarning,
    )
    from .transport.cassettes.files import EXPECTED_SHAPES as EXPECTED_SHAPES
    from .transport.cassettes.files import load_interactions as load_interactions
    from .transport.cassettes.matching import NORMALISATIONS as NORMALISATIONS
    from .transport.cassettes.matching import (
        first_json_difference as first_json_difference,
    )
    from .transport.cassettes.modes import RECORD_MODES as RECORD_MODES
    from .transport.cassettes.modes import RecordMode as RecordMode
    from .transport.cassettes.redaction import (
        DEFAULT_SECRET_FIELDS as DEFAULT_SECRET_FIELDS,
    )
    from .transport.cassettes.redaction import (
        DEFAULT_SECRET_HEADERS as DEFAULT_SECRET_HEADERS,
    )
    from .transport.cassettes.redaction import (
        DEFAULT_SECRET_QUERY_PARAMS as DEFAULT_SECRET_QUERY_PARAMS,
    )
    from .transport.cassettes.redaction import REDACTED as REDACTED
    from .transport.cassettes.redaction import RedactionRules as RedactionRules
    from .transport.cassettes.redaction import Redactor as Redactor
    from .transport.cassettes.redaction import find_leak as find_leak
    from .transport.cassettes.redaction import redact_text as redact_text
    from .transport.cassettes.session import CassetteSession as CassetteSession
    from .transport.cassettes.session import MutationSpec as MutationSpec
    from .transport.cassettes.session import use_cassette as use_cassette

_EXPORTS: dict[str, str] = {
    "CassetteError": "transport.cassettes.errors",
    "CassetteLeakError": "transport.cassettes.errors",
    "CassetteMismatch": "transport.cassettes.errors",
    "CassetteSession": "transport.cassettes.session",
    "DEFAULT_SECRET_FIELDS": "transport.cassettes.redaction",
    "DEFAULT_SECRET_HEADERS": "transport.cassettes.redaction",
    "DEFAULT_SECRET_QUERY_PARAMS": "transport.cassettes.redaction",
    "EXPECTED_SHAPES": "transport.cassettes.files",
    "MutationSpec": "transport.cassettes.session",
    "NORMALISATIONS": "transport.cassettes.matching",
    "RECORD_MODES": "transport.cassettes.modes",
    "REDACTED": "transport.cassettes.redaction",
    "RecordMode": "transport.cassettes.modes",
    "RedactionRules": "transport.cassettes.redaction",
    "Redactor": "transport.cassettes.redaction",
    "ScriptExhaustedWarning": "transport.cassettes.errors",
    "find_leak": "transport.cassettes.redaction",
    "first_json_difference": "transport.cassettes.matching",
    "load_interactions": "transport.cassettes.files",
    "redact_text": "transport.cassettes.redaction",
    "use_cassette": "transport.cassettes.session",
}
"""Where each name lives (module under this package)."""


__getattr__, __dir__ = lazy_names(__name__, _EXPORTS)

__all__ = sorted(_EXPORTS)
