"""Validates joules' JSONL records against the JSON Schemas of docs/schema/ (Draft 2020-12, with
python3-jsonschema, installed by scripts/install-deps test).  conftest.py's read_jsonl() and
records_of() call validate() on every record the CLI tests read, so every record joules writes
in the tests is held to its schema.

validate(record) raises AssertionError naming the record type and the first problem."""
import json
import pathlib

SCHEMA_DIR = pathlib.Path(__file__).resolve().parents[2] / "docs" / "schema"
TYPES = ("session_start", "session_end", "step", "phase", "prediction", "straggler", "sample", "tune",
         "inference", "doctor")

_validators = {}


def _validator(kind):
    if kind in _validators:
        return _validators[kind]
    try:
        import jsonschema
    except ImportError as e:  # pragma: no cover - the environment, not joules
        raise AssertionError("python3-jsonschema is missing: run scripts/install-deps test") from e
    store = {}
    for path in SCHEMA_DIR.glob("*.json"):
        schema = json.loads(path.read_text())
        store[path.as_uri()] = schema
        store[schema.get("$id", path.name)] = schema
    path = SCHEMA_DIR / f"{kind}.json"
    schema = store[path.as_uri()]
    resolver = jsonschema.RefResolver(base_uri=path.as_uri(), referrer=schema, store=store)
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    v = cls(schema, resolver=resolver)
    _validators[kind] = v
    return v


def validate(record):
    kind = record.get("type")
    assert kind in TYPES, f"record of unknown type {kind!r}: not in docs/schema ({sorted(TYPES)})"
    errors = sorted(_validator(kind).iter_errors(record), key=lambda e: list(e.path))
    if errors:
        e = errors[0]
        where = "/".join(str(p) for p in e.path) or "(record)"
        raise AssertionError(f"{kind} record does not match docs/schema/{kind}.json at {where}: "
                             f"{e.message}")


def validate_all(records):
    for r in records:
        validate(r)
    return records
