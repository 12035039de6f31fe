"""The headline table of docs/benchmarks.md: one row per figure, every tool's median, and the
peer ÷ joules ratio in brackets, all read from a results file."""
from __future__ import annotations

from .common import TOOLS
from .render import fmt_mb, fmt_ms, fmt_pct, fmt_ratio, fmt_rate


def _cells(values: dict, fmt, lower_is_better=True, cannot: dict | None = None):
    j = values.get("joules")
    row = []
    for t in TOOLS:
        v = values.get(t)
        if v is None:
            row.append("cannot" if cannot is None or t in cannot else "–")
            continue
        cell = fmt(v)
        if t != "joules" and j not in (None, 0) and v is not None:
            r = (v / j) if lower_is_better else (j / v if v else None)
            cell += f" ({fmt_ratio(r)})"
        row.append(cell)
    return row


def _energy_cells(k: dict) -> list[str]:
    """Errors below the setup's resolution are shown as such, and not divided."""
    res = max((k[t].get("resolution_percent") or 0) for t in TOOLS)
    j = k["joules"]["abs_error_percent"]["median"]
    row = []
    for t in TOOLS:
        v = k[t]["abs_error_percent"]["median"] if k[t]["abs_error_percent"]["n"] else None
        if v is None:
            row.append("cannot")
            continue
        cell = f"< {fmt_pct(res)} (exact here)" if v < res else fmt_pct(v)
        if t != "joules" and j is not None and v >= res:
            cell += f" ({'> ' + fmt_ratio(v / res) if j < res else fmt_ratio(v / j)})"
        row.append(cell)
    return row


def rows(figs: dict) -> list[list[str]]:
    out = []
    f = figs.get("startup")
    if f and "error" not in f:
        out.append(["start-up overhead, `-- true`"] + _cells(
            {t: f["overhead_s"][t]["median"] for t in TOOLS}, fmt_ms))
    f = figs.get("steady")
    if f and "error" not in f:
        out.append(["sampler CPU, % of a core"] + _cells(
            {t: (f["tools"][t]["cpu_per_wall_s"]["median"] or 0) * 100 for t in TOOLS
             if f["tools"].get(t, {}).get("cpu_per_wall_s", {}).get("median") is not None},
            fmt_pct))
        out.append(["peak RSS, 60 s run"] + _cells(
            {t: f["tools"][t]["peak_rss_kb"]["median"] for t in TOOLS
             if f["tools"].get(t, {}).get("peak_rss_kb", {}).get("n")}, fmt_mb))
    f = figs.get("energy")
    if f and "error" not in f:
        for kind, label in (("counter", "total-energy error, counter GPUs (|median|)"),
                            ("polled", "total-energy error, no counter (|median|)")):
            k = f["kinds"].get(kind)
            if k:
                out.append([label] + _energy_cells(k))
    f = figs.get("step_accuracy")
    if f and "error" not in f:
        for c in f["configs"]:
            if c["step_ms"] != 100:
                continue
            label = (f"per-step error median, {'Python' if c['child'] == 'python' else 'C'} child, "
                     f"100 ms steps, counter {'continuous' if c['counter_update_ms'] == 0 else 'every 100 ms'}")
            vals = {t: c[t]["median"] * 100 for t in ("joules", "matcha")
                    if c.get(t, {}).get("median") is not None}
            out.append([label] + _cells(vals, fmt_pct))
    f = figs.get("throughput")
    if f and "error" not in f:
        def best(recs):
            ok = [r for r in recs if not r.get("error")]
            r = max(ok, key=lambda r: r["count"]) if ok else None
            return r["count"] / r["wall_s"] if r else None
        vals = {t: best(f["steps"][t]) for t in ("joules", "matcha") if best(f["steps"][t])}
        out.append(["step lines per second through `wrap`"] + _cells(
            vals, lambda x: fmt_rate(x, "/s"), lower_is_better=False))
    f = figs.get("scrape")
    if f and "error" not in f:
        vals = {}
        for t, key in (("joules", "joules 8 new"), ("matcha", "matcha 8 new")):
            x = f["runs"].get(key)
            if x and "error" not in x:
                vals[t] = x["p99_ms"] / 1000
        out.append(["`/metrics` p99, 50 scrapers, new connections"] + _cells(vals, fmt_ms))
    f = figs.get("corpus")
    if f and "error" not in f:
        tot = f["total"]
        out.append(["step lines recognised (corpus)"] + _cells(
            {t: tot[t]["recall_percent"] for t in ("joules", "matcha")}, fmt_pct,
            lower_is_better=False))
        row = ["false steps (corpus)"]
        for t in TOOLS:
            row.append(str(tot[t]["false_steps"]) if t in tot else "cannot")
        out.append(row)
    f = figs.get("monitor")
    if f and "error" not in f:
        vals = {}
        for t in ("joules", "matcha"):
            s = f["views"].get(f"{t} terminal 500", {}).get("cpu_per_wall_s", {})
            if s.get("median") is not None:
                vals[t] = s["median"] * 100
        out.append(["`monitor` CPU, full screen, 500 ms, % of a core"] + _cells(vals, fmt_pct))
        d = f["doctor"]["wall_s"]["median"]
        out.append(["`doctor` wall time, 8 GPUs"] + _cells({"joules": d} if d else {}, fmt_ms))
    return out


def table(figs: dict) -> dict:
    return {"title": "Headlines (medians; in brackets peer ÷ joules for costs and errors, "
                     "joules ÷ peer for rates: above 1× means joules does better)",
            "columns": ["figure", *TOOLS], "rows": rows(figs),
            "notes": ["`cannot`: the tool has no way to do it (each section says why)."]}
