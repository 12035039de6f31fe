"""Validates an OTLP/HTTP metrics request in the JSON encoding against the message definitions of
opentelemetry-proto (opentelemetry/proto/metrics/v1/metrics.proto, common/v1/common.proto,
resource/v1/resource.proto, collector/metrics/v1/metrics_service.proto), as the OTLP spec's
JSON rules apply them: lowerCamelCase field names, enums as integers, 64-bit integers as
decimal strings (numbers accepted too, as proto3 JSON parsers do), one member of a oneof.

validate(request) raises AssertionError naming the path of the first problem.
parse_with_protobuf() also parses the request with protobuf's own JSON parser and the classes of
the `opentelemetry-proto` package, which reject unknown fields and wrong types; the package comes
from build/test-venv, made by `scripts/install-deps test` (make test runs it), and a missing one
fails the test with what to run."""
import pathlib
import sys

TEST_VENV = pathlib.Path(__file__).resolve().parents[2] / "build" / "test-venv"

U32, U64, S64, F64, BOOL, STR, BYTES = "uint32", "fixed64", "int64", "double", "bool", "string", "bytes"

# message -> field -> (type, repeated); oneofs listed separately.
MESSAGES = {
    "ExportMetricsServiceRequest": {"resourceMetrics": ("ResourceMetrics", True)},
    "ResourceMetrics": {"resource": ("Resource", False), "scopeMetrics": ("ScopeMetrics", True),
                        "schemaUrl": (STR, False)},
    "Resource": {"attributes": ("KeyValue", True), "droppedAttributesCount": (U32, False),
                 "entityRefs": ("EntityRef", True)},
    "EntityRef": {"schemaUrl": (STR, False), "type": (STR, False), "idKeys": (STR, True),
                  "descriptionKeys": (STR, True)},
    "ScopeMetrics": {"scope": ("InstrumentationScope", False), "metrics": ("Metric", True),
                     "schemaUrl": (STR, False)},
    "InstrumentationScope": {"name": (STR, False), "version": (STR, False),
                             "attributes": ("KeyValue", True),
                             "droppedAttributesCount": (U32, False)},
    "Metric": {"name": (STR, False), "description": (STR, False), "unit": (STR, False),
               "gauge": ("Gauge", False), "sum": ("Sum", False),
               "metadata": ("KeyValue", True)},
    "Gauge": {"dataPoints": ("NumberDataPoint", True)},
    "Sum": {"dataPoints": ("NumberDataPoint", True), "aggregationTemporality": ("Temporality", False),
            "isMonotonic": (BOOL, False)},
    "NumberDataPoint": {"attributes": ("KeyValue", True), "startTimeUnixNano": (U64, False),
                        "timeUnixNano": (U64, False), "asDouble": (F64, False),
                        "asInt": (S64, False), "flags": (U32, False)},
    "KeyValue": {"key": (STR, False), "value": ("AnyValue", False)},
    "AnyValue": {"stringValue": (STR, False), "boolValue": (BOOL, False), "intValue": (S64, False),
                 "doubleValue": (F64, False), "bytesValue": (BYTES, False)},
}
ONEOFS = {
    "Metric": [("gauge", "sum")],
    "NumberDataPoint": [("asDouble", "asInt")],
    "AnyValue": [("stringValue", "boolValue", "intValue", "doubleValue", "bytesValue")],
}
TEMPORALITY = {0, 1, 2}  # UNSPECIFIED, DELTA, CUMULATIVE


def _scalar(kind, v, path):
    if kind == STR or kind == BYTES:
        assert isinstance(v, str), (path, v)
    elif kind == BOOL:
        assert isinstance(v, bool), (path, v)
    elif kind == F64:
        assert isinstance(v, (int, float)) and not isinstance(v, bool), (path, v)
    elif kind == U32:
        assert isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 2**32, (path, v)
    elif kind in (U64, S64):
        if isinstance(v, str):
            assert v.lstrip("-").isdigit(), (path, v)
            v = int(v)
        assert isinstance(v, int) and not isinstance(v, bool), (path, v)
        lo, hi = (0, 2**64) if kind == U64 else (-2**63, 2**63)
        assert lo <= v < hi, (path, v)
    elif kind == "Temporality":
        assert isinstance(v, int) and v in TEMPORALITY, (path, "enum as an integer", v)
    else:
        raise AssertionError((path, "unknown type", kind))


def _message(name, obj, path):
    assert isinstance(obj, dict), (path, "expected an object for", name)
    fields = MESSAGES[name]
    for key, value in obj.items():
        assert key in fields, (path, f"unknown field {key!r} in {name}")
        kind, repeated = fields[key]
        values = value if repeated else [value]
        if repeated:
            assert isinstance(value, list), (path + "." + key, "expected an array")
        for i, v in enumerate(values):
            p = f"{path}.{key}[{i}]" if repeated else f"{path}.{key}"
            if kind in MESSAGES:
                _message(kind, v, p)
            else:
                _scalar(kind, v, p)
    for group in ONEOFS.get(name, []):
        present = [k for k in group if k in obj]
        assert len(present) <= 1, (path, "more than one of", present)


def validate(request):
    _message("ExportMetricsServiceRequest", request, "$")
    for rm in request.get("resourceMetrics", []):
        for sm in rm.get("scopeMetrics", []):
            for m in sm.get("metrics", []):
                assert m.get("name"), ("a metric without a name", m)
                assert "gauge" in m or "sum" in m, ("a metric without data", m["name"])
                for p in (m.get("gauge") or m.get("sum"))["dataPoints"]:
                    assert "asDouble" in p or "asInt" in p, ("a point without a value", m["name"])
                    assert "timeUnixNano" in p, ("a point without a time", m["name"])


def _protobuf_modules():
    """json_format and metrics_service_pb2, from build/test-venv (ahead of anything the system
    has, so that the pinned versions are the ones used)."""
    site = TEST_VENV / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages"
    if site.is_dir() and str(site) not in sys.path:
        sys.path.insert(0, str(site))
    try:
        from google.protobuf import json_format
        from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2
    except ImportError as e:
        raise AssertionError(f"opentelemetry-proto is not importable ({e}) from {site}: run "
                             "scripts/install-deps test") from e
    return json_format, metrics_service_pb2


def parse_with_protobuf(body):
    """Parses `body` as an ExportMetricsServiceRequest with protobuf's JSON parser; returns the
    message.  Raises ParseError on an unknown field or a wrong type, AssertionError when
    opentelemetry-proto cannot be imported."""
    json_format, metrics_service_pb2 = _protobuf_modules()
    msg = metrics_service_pb2.ExportMetricsServiceRequest()
    json_format.Parse(body, msg)  # raises ParseError on an unknown field or a wrong type
    return msg
