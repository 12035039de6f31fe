"""Every query of dashboards/joules.json is shown in the unit of what it computes: the unit of its
metric, from the name's suffix (docs/metrics.md: _watts, _joules, _celsius, _ratio, _bytes,
_hertz, _seconds, _grams, _kwh), carried through the PromQL around it (rate() of joules is watts,
of a count is counts per second; increase() keeps the unit; energy divided by steps is energy;
`* 3600` makes a rate per hour). A panel whose queries differ in unit gives each its own with a
field override by query (refId). Pure JSON and text: needs no joules binary."""
import json
import re

import pytest

from conftest import ROOT

DASHBOARD = ROOT / "dashboards" / "joules.json"
METRIC = re.compile(r"\b(joules_[A-Za-z0-9_]+)\b")

# Name suffix -> Grafana unit id. Longest suffixes first.
SUFFIX_UNITS = [
    ("_bytes_per_second", "Bps"),
    ("_grams_per_kwh", "suffix:g/kWh"),
    ("_joules_total", "joule"), ("_joules", "joule"),
    ("_seconds_total", "s"), ("_seconds", "s"),
    ("_grams_total", "massg"),
    ("_kwh_total", "kwatth"),
    ("_watts", "watt"), ("_celsius", "celsius"), ("_ratio", "percentunit"),
    ("_bytes", "bytes"), ("_hertz", "hertz"),
]
# Families whose value is money in the `currency` label (docs/metrics.md): Grafana has no unit
# that follows a label, so they are shown as plain numbers, with the currency in the legend.
MONEY = ("joules_run_cost_total", "joules_node_cost_total", "joules_price_per_kwh")
# Per second and per hour of each base unit.
PER_SECOND = {"joule": "watt", "kwatth": "suffix:kWh/s", "massg": "suffix:g/s", "none": "cps",
              "money": "suffix:/s"}
PER_HOUR = {"kwatth": "kwatt", "massg": "suffix:g/h", "money": "none", "none": "cph"}


def base_unit(name):
    if name in MONEY:
        return "money"
    for suffix, unit in SUFFIX_UNITS:
        if name.endswith(suffix):
            return unit
    return "none"  # counts, states, numbers without a unit


def unit_of(expr):
    """The Grafana unit of what `expr` computes."""
    names = METRIC.findall(expr)
    assert names, expr
    first = names[0]
    unit = base_unit(first)
    # Energy per step: a quantity divided by a count of steps keeps the quantity's unit.
    if len(names) == 2 and "/" in expr:
        assert base_unit(names[1]) == "none", expr
    else:
        assert len(set(names)) == 1, f"a query of several families: {expr}"
    if re.search(r"\brate\(\s*" + first, expr):
        if re.search(r"\*\s*3600\b", expr):
            unit = PER_HOUR[unit]
        else:
            unit = PER_SECOND[unit]
    assert not re.search(r"[*/]\s*1e\d", expr), f"a scaled value hides its unit: {expr}"
    return "none" if unit == "money" else unit


def panels():
    d = json.loads(DASHBOARD.read_text())
    return [p for p in d["panels"] if p.get("targets")]


def shown_unit(panel, ref_id):
    """The unit Grafana applies to the query `ref_id`: its override, else the panel's."""
    config = panel.get("fieldConfig", {})
    for o in config.get("overrides", []):
        m = o.get("matcher", {})
        if m.get("id") == "byFrameRefID" and m.get("options") == ref_id:
            for prop in o.get("properties", []):
                if prop.get("id") == "unit":
                    return prop["value"]
    return config.get("defaults", {}).get("unit", "none")


def test_the_units_of_names_follow_the_suffixes():
    assert unit_of("sum by (hostname) (joules_gpu_power_watts)") == "watt"
    assert unit_of("sum by (hostname) (rate(joules_cpu_energy_joules_total[1m]))") == "watt"
    assert unit_of("increase(joules_gpu_energy_joules_total[1h])") == "joule"
    assert unit_of("rate(joules_run_steps_total[5m])") == "cps"
    assert unit_of("increase(joules_run_step_energy_joules_total[5m]) / "
                   "increase(joules_run_steps_total[5m])") == "joule"
    assert unit_of("sum(rate(joules_node_energy_kwh_total[5m])) * 3600") == "kwatt"
    assert unit_of("joules_run_gpu_step_energy_deviation_ratio") == "percentunit"
    assert unit_of("joules_gpu_temperature_celsius") == "celsius"
    assert unit_of("joules_gpu_lost") == "none"
    with pytest.raises(AssertionError):
        unit_of("joules_gpu_sm_clock_hertz / 1e9")


@pytest.mark.parametrize("panel", panels(), ids=lambda p: p["title"])
def test_each_query_is_shown_in_its_unit(panel):
    for target in panel["targets"]:
        expected = unit_of(target["expr"])
        assert shown_unit(panel, target["refId"]) == expected, (target["refId"], target["expr"])
