"""The table format shared with the synthesized tables (data/perf/README.md). Pure Python, no torch."""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Mapping, Sequence

# File name -> column order. Latency is always the last column, in milliseconds.
SCHEMAS: Dict[str, List[str]] = {
    "gemm": ["dtype", "m", "n", "k", "latency_ms"],
    "context_attention": ["batch", "seq", "heads", "kv_heads", "head_dim", "dtype", "kv_dtype", "window", "latency_ms"],
    "generation_attention": ["batch", "kv_len", "heads", "kv_heads", "head_dim", "kv_dtype", "window", "latency_ms"],
    "allreduce": ["kind", "dtype", "gpus", "elements", "latency_ms"],
    "nccl": ["collective", "dtype", "gpus", "elements", "latency_ms"],
    "moe": ["dtype", "tokens", "hidden", "inter", "topk", "experts", "moe_tp", "moe_ep", "latency_ms"],
    "elementwise": ["op", "bytes", "latency_ms"],
}

META_REQUIRED = ["system", "backend", "version", "kind", "calibrated_on", "borrowed", "generator"]
META_MEASURED = ["gpu", "driver", "torch", "cuda", "date"]


def format_latency(ms: float) -> str:
    """Five significant digits in the shortest form, as the synthesized tables write them (stable diffs)."""
    if not math.isfinite(ms) or ms <= 0:
        raise ValueError(f"latency must be a positive finite number, got {ms!r}")
    rounded = float(f"{ms:.5g}")
    return str(int(rounded)) if rounded.is_integer() else repr(rounded)


def _cell(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    text = str(value)
    if any(c in text for c in ",\n\r\""):
        raise ValueError(f"cell {text!r} contains a character the table format does not allow")
    return text


def render_csv(table: str, rows: Iterable[Mapping[str, object]]) -> str:
    """Header plus one line per row, keys sorted so reruns give identical files."""
    if table not in SCHEMAS:
        raise ValueError(f"unknown table {table!r}; known: {', '.join(SCHEMAS)}")
    cols = SCHEMAS[table]
    keys = cols[:-1]
    lines = []
    seen = set()
    for row in rows:
        missing = [c for c in cols if c not in row]
        if missing:
            raise ValueError(f"{table} row lacks {', '.join(missing)}: {dict(row)!r}")
        key = tuple(_cell(row[c]) for c in keys)
        if key in seen:
            raise ValueError(f"{table}: duplicate row for {dict(zip(keys, key))}")
        seen.add(key)
        lines.append((_sort_key(key), key + (format_latency(float(row["latency_ms"])),)))
    lines.sort(key=lambda item: item[0])
    out = [",".join(cols)] + [",".join(cells) for _, cells in lines]
    return "\n".join(out) + "\n"


def _sort_key(cells: Sequence[str]):
    # Numbers sort numerically, words alphabetically.
    return tuple((0, float(c), "") if _is_number(c) else (1, 0.0, c) for c in cells)


def _is_number(text: str) -> bool:
    try:
        float(text)
        return True
    except ValueError:
        return False


_PLAIN = re.compile(r"^[A-Za-z0-9_.+/-]+$")
_DATE = re.compile(r"^\d{4}-\d\d?-\d\d?")  # YAML 1.1 readers turn these into dates


def _yaml_scalar(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    text = str(value)
    # Quote anything a YAML reader could take for another type or that carries special characters.
    if (_PLAIN.match(text) and not _is_number(text) and not _DATE.match(text)
            and text.lower() not in ("true", "false", "null", "yes", "no", "on", "off", "~")):
        return text
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def render_meta(meta: Mapping[str, object]) -> str:
    """meta.yaml as flat `key: value` lines (no YAML library needed on the GPU host)."""
    required = list(META_REQUIRED)
    if meta.get("kind") == "measured":
        required += META_MEASURED
    missing = [k for k in required if k not in meta]
    if missing:
        raise ValueError(f"meta lacks {', '.join(missing)}")
    order = required + sorted(k for k in meta if k not in required)
    lines = []
    for key in order:
        value = meta[key]
        if isinstance(value, (list, tuple)):
            lines.append(f"{key}: [{', '.join(_yaml_scalar(v) for v in value)}]")
        else:
            lines.append(f"{key}: {_yaml_scalar(value)}")
    return "\n".join(lines) + "\n"


def version_dir(torch_version: str) -> str:
    """`2.5.1+cu124` -> `2.5.1`: the local build tag goes to meta.yaml, not the path."""
    return torch_version.split("+", 1)[0]


def table_dir(out: str, system: str, torch_version: str) -> str:
    return os.path.join(out, system, "torch", version_dir(torch_version))


def write_table(directory: str, table: str, rows: Iterable[Mapping[str, object]]) -> str:
    """Write <table>.csv atomically; returns the path."""
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, f"{table}.csv")
    _atomic_write(path, render_csv(table, rows))
    return path


def write_meta(directory: str, meta: Mapping[str, object]) -> str:
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, "meta.yaml")
    _atomic_write(path, render_meta(meta))
    return path


def _atomic_write(path: str, text: str) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8", newline="\n") as f:
        f.write(text)
    os.replace(tmp, path)


def read_table(path: str) -> List[Dict[str, str]]:
    """Read one of our CSVs back (used by tests and by --resume-style merges)."""
    with open(path, encoding="utf-8") as f:
        lines = [ln.strip() for ln in f if ln.strip() and not ln.startswith("#")]
    if not lines:
        return []
    header = lines[0].split(",")
    return [dict(zip(header, ln.split(","))) for ln in lines[1:]]


@dataclass
class TableSet:
    """Rows collected so far, per table."""

    rows: Dict[str, List[Dict[str, object]]] = field(default_factory=dict)

    def add(self, table: str, row: Dict[str, object]) -> None:
        if table not in SCHEMAS:
            raise ValueError(f"unknown table {table!r}")
        self.rows.setdefault(table, []).append(row)

    def write(self, directory: str) -> List[str]:
        return [write_table(directory, t, rs) for t, rs in sorted(self.rows.items()) if rs]
