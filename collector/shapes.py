"""Model shapes the tables must cover: read from data/models/*.yaml when present, else a built-in list.

The registry files hold `models:` lists whose entries may `extends:` another entry (shallow override). Only
the facts the GEMM and attention grids need are read: hidden size, heads, KV heads, head dim, dense FFN size,
vocab, and whether the model uses MLA or MoE. PyYAML is used when installed; otherwise a small reader handles
the block-list layout of those files (scalars at the entry's indent; flow maps only mark that a key is set)."""

from __future__ import annotations

import glob
import os
import re
from dataclasses import dataclass
from typing import Dict, Iterable, List, Optional, Sequence

Entry = Dict[str, object]


@dataclass(frozen=True)
class ModelShape:
    name: str
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    inter: int  # dense FFN intermediate size; 0 when no layer has a dense FFN
    vocab: int = 0
    mla: bool = False  # MLA attention is a separate module table; skip its attention shapes and projections

    def dims(self) -> tuple:
        return (self.hidden, self.heads, self.kv_heads, self.head_dim, self.inter, self.vocab, self.mla)


# Public architecture facts of widely deployed models (from their published configs).
BUILTIN_MODELS: List[ModelShape] = [
    ModelShape("meta-llama/Llama-3.1-8B", 4096, 32, 8, 128, 14336, 128256),
    ModelShape("Qwen/Qwen3-32B", 5120, 64, 8, 128, 25600, 151936),
    ModelShape("meta-llama/Llama-3.1-70B", 8192, 64, 8, 128, 28672, 128256),
    ModelShape("Qwen/Qwen3-8B", 4096, 32, 8, 128, 12288, 151936),
    ModelShape("Qwen/Qwen3-235B-A22B", 4096, 64, 4, 128, 0, 151936),
    ModelShape("mistralai/Mixtral-8x7B-v0.1", 4096, 32, 8, 128, 0, 32000),
]

# Field -> accepted spellings (our camelCase registry schema, HF snake_case).
_ALIASES: Dict[str, List[str]] = {
    "name": ["id", "name"],
    "hidden": ["hiddenSize", "hidden_size"],
    "heads": ["numHeads", "num_heads", "num_attention_heads"],
    "kv_heads": ["numKvHeads", "num_kv_heads", "num_key_value_heads"],
    "head_dim": ["headDim", "head_dim"],
    "inter": ["intermediateSize", "intermediate_size"],
    "vocab": ["vocabSize", "vocab_size"],
}


def _first(entry: Entry, keys: Iterable[str]) -> Optional[object]:
    for k in keys:
        if entry.get(k) is not None:
            return entry[k]
    return None


def _scalar(text: str) -> object:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    if re.fullmatch(r"-?\d+", text):
        return int(text)
    return text


def parse_registry_text(text: str) -> List[Entry]:
    """Entries of one model file: the `models:` list, or the whole document when it describes one model."""
    try:
        import yaml  # type: ignore
    except ImportError:
        return _parse_without_yaml(text)
    doc = yaml.safe_load(text)
    if isinstance(doc, dict) and isinstance(doc.get("models"), list):
        return [e for e in doc["models"] if isinstance(e, dict)]
    return [doc] if isinstance(doc, dict) else []


def _flow_map(text: str) -> Entry:
    """`{ numExperts: 256, topK: 8 }` -> dict (flat flow maps only, as the registry writes them)."""
    return {k: _scalar(v) for k, v in re.findall(r"([A-Za-z_]\w*)\s*:\s*([^,}]+)", text)}


def _parse_without_yaml(text: str) -> List[Entry]:
    entries: List[Entry] = []
    current: Optional[Entry] = None
    field_indent = -1
    flat: Entry = {}
    for raw in text.splitlines():
        line = re.sub(r"\s+#.*$", "", raw.rstrip())
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        indent = len(line) - len(line.lstrip())
        item = re.match(r"^(\s*)-\s+([A-Za-z_]\w*)\s*:\s*(.*)$", line)
        if item and (current is None or indent < field_indent):
            current = {item.group(2): _scalar(item.group(3))}
            entries.append(current)
            field_indent = len(item.group(1)) + 2
            continue
        kv = re.match(r"^\s*([A-Za-z_]\w*)\s*:\s*(.*)$", line)
        if not kv:
            continue
        key, value = kv.group(1), kv.group(2).strip()
        if current is not None and indent == field_indent:
            if value.startswith("{"):
                current[key] = _flow_map(value)
            else:  # a nested block (e.g. layerOverrides) only marks that the key is set
                current[key] = _scalar(value) if value else True
        elif current is None and indent == 0 and value:
            flat[key] = _scalar(value)
    return entries or ([flat] if flat else [])


def resolve_extends(entries: Sequence[Entry]) -> List[Entry]:
    """Each entry merged over the entry it `extends` (recursively), in the given order."""
    by_id = {str(e.get("id")): e for e in entries if e.get("id") is not None}
    out: List[Entry] = []

    def merged(e: Entry, depth: int = 0) -> Entry:
        parent = by_id.get(str(e.get("extends"))) if e.get("extends") is not None else None
        if parent is None or depth > 16 or parent is e:
            return dict(e)
        base = merged(parent, depth + 1)
        base.update({k: v for k, v in e.items() if k != "extends"})
        return base

    for e in entries:
        out.append(merged(e))
    return out


def _int(v: object) -> int:
    try:
        return int(v)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return 0


def model_from_entry(entry: Entry, fallback_name: str) -> Optional[ModelShape]:
    """A ModelShape from one (resolved) entry, or None when it lacks the needed fields."""
    vals = {f: _first(entry, keys) for f, keys in _ALIASES.items()}
    hidden, heads = _int(vals["hidden"]), _int(vals["heads"])
    if hidden <= 0 or heads <= 0:
        return None
    kv = _int(vals["kv_heads"]) or heads
    head_dim = _int(vals["head_dim"]) or hidden // heads
    inter = _int(vals["inter"])
    moe = entry.get("moe")
    if moe:
        # MoE models have dense FFN layers only in their first `firstDenseLayers` layers.
        first_dense = _int(moe.get("firstDenseLayers")) if isinstance(moe, dict) else 0
        if first_dense <= 0:
            inter = 0
    mla = bool(entry.get("mla")) or entry.get("kv_lora_rank") is not None
    return ModelShape(str(vals["name"] or fallback_name), hidden, heads, kv, head_dim, inter, _int(vals["vocab"]), mla)


def load_models(models_dir: Optional[str]) -> List[ModelShape]:
    """Distinct model shapes from `models_dir` (files sorted by name), or the built-in list when none can be read."""
    entries: List[Entry] = []
    if models_dir and os.path.isdir(models_dir):
        paths = sorted(glob.glob(os.path.join(models_dir, "*.yaml")) + glob.glob(os.path.join(models_dir, "*.yml")))
        for path in paths:
            with open(path, encoding="utf-8") as f:
                for e in parse_registry_text(f.read()):
                    e.setdefault("id", os.path.splitext(os.path.basename(path))[0])
                    entries.append(e)
    found: List[ModelShape] = []
    seen = set()
    for e in resolve_extends(entries):
        shape = model_from_entry(e, str(e.get("id")))
        if shape is not None and shape.dims() not in seen:
            seen.add(shape.dims())
            found.append(shape)
    return found or list(BUILTIN_MODELS)


def select_models(models: Sequence[ModelShape], names: Optional[Sequence[str]]) -> List[ModelShape]:
    """The models named (in the order named), or all when `names` is None; falls back to the first len(names)."""
    if names is None:
        return list(models)
    by_name = {m.name: m for m in models}
    picked = [by_name[n] for n in names if n in by_name]
    return picked or list(models[: len(names)])


def default_models_dir() -> str:
    """data/models of the repository this package sits in."""
    return os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "models"))
