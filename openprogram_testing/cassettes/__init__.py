"""Record and replay real provider HTTP traffic, built on vcrpy.

The parts, one job each: :mod:`.files` reads every accepted file shape (vcrpy YAML,
pydantic-ai's ``parsed_body`` dialect, HAR 1.2) and writes readable YAML; :mod:`.redaction` keeps
secrets out of files (by name, by shape, by value); :mod:`.matching` decides which recorded
interaction answers a request; :mod:`.session` is the open cassette (``use_cassette``);
:mod:`.vcr_internals` holds every use of vcrpy's private parts.  vcrpy and PyYAML are imported
only when a cassette is opened or loaded.
"""

from .errors import CassetteError, CassetteLeakError, CassetteMismatch, ScriptExhaustedWarning
from .files import EXPECTED_SHAPES, load_interactions
from .matching import NORMALISATIONS, first_json_difference
from .redaction import (
    DEFAULT_SECRET_FIELDS,
    DEFAULT_SECRET_HEADERS,
    DEFAULT_SECRET_QUERY_PARAMS,
    REDACTED,
    RedactionRules,
    Redactor,
    find_leak,
    redact_text,
)
from .session import (
    RECORD_MODES,
    CassetteSession,
    MutationSpec,
    RecordMode,
    use_cassette,
)

__all__ = [
    "DEFAULT_SECRET_FIELDS",
    "DEFAULT_SECRET_HEADERS",
    "DEFAULT_SECRET_QUERY_PARAMS",
    "EXPECTED_SHAPES",
    "NORMALISATIONS",
    "RECORD_MODES",
    "REDACTED",
    "CassetteError",
    "CassetteLeakError",
    "CassetteMismatch",
    "CassetteSession",
    "MutationSpec",
    "RecordMode",
    "RedactionRules",
    "Redactor",
    "ScriptExhaustedWarning",
    "find_leak",
    "first_json_difference",
    "load_interactions",
    "redact_text",
    "use_cassette",
]
