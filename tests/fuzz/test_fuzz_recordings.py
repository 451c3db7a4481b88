"""Fuzzing the companion file's reader: every hostile `<stem>.leakfinder.json` is read into the model or refused with
a LeakfinderError naming it, and what is read always analyses.

Seeds are companion files as the capture helper writes them (tb_leakfinder.testing.recordings_builder) for a small
leaking loop whose kept addresses they name. Each input is the seed with its JSON values mutated (a value of another
type, an extreme number, deep nesting, a key dropped or renamed, a list grown) or, more rarely, its bytes (flipped,
cut, spliced). What reads goes through the analysis of the loop with it, and the host's report JSON.
"""

from __future__ import annotations

import copy
import json
import random
from pathlib import Path
from typing import Any

from tb_leakfinder.analyses.pipeline import analyze_host
from tb_leakfinder.errors import LeakfinderError
from tb_leakfinder.model.memory import ALLOC
from tb_leakfinder.read.formats import registry
from tb_leakfinder.testing.recordings_builder import companion, holder, write_companion
from tb_leakfinder.wire import host_json
from tests.support.columns import host_profile, memory_events, steps

CI_SEED = 20261207
CI_INPUTS = 800
BYTES_SHARE = 0.2
STEPS = 8
KEPT = [0x7000_0000 + n * 0x1000 for n in range(STEPS)]
EXTREMES: list[Any] = [
    None,
    True,
    -1,
    0,
    1 << 63,
    1 << 64,
    10**400,
    1e308,
    -0.0,
    "",
    "x" * 5000,
    "\ud800",
    [],
    {},
    [[[[[]]]]],
    "complete",
    "partial",
    "failed",
    "attribute",
]


def _seed() -> dict[str, Any]:
    sample = {"step": 3, "time_ns": 10**18, "main": {"pid": 1, "rss": 10, "uss": 9, "pss": None}, "children": []}
    return companion(
        holders=[
            holder("model.heads", KEPT, type_name="ModuleList", created="/src/train.py:40 in train", nbytes=4096 * STEPS),
            holder("memo", KEPT[:2], kind="default_argument", type_name="dict", count=5),
        ],
        sources={"/src/train.py:40": "self.heads = nn.ModuleList()"},
        process_memory={"status": "complete", "warning": "", "source": "proc", "samples": [sample]},
    )


def _loop():
    times = [n * 1000 + 10 for n in range(STEPS)]
    events = memory_events(times, ALLOC, KEPT, 4096, op="Mul", shape="[32,32]", region="output")
    return host_profile(events, steps(*((n, n * 1000, n * 1000 + 999) for n in range(STEPS))))


def _containers(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Paths to every dict and list in a JSON value, itself first."""
    found = [path] if isinstance(value, (dict, list)) else []
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else []
    for key, item in items:
        found += _containers(item, (*path, key))
    return found


def _at(value: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        value = value[key]
    return value


def _mutate_json(rng: random.Random, document: dict[str, Any]) -> dict[str, Any]:
    document = copy.deepcopy(document)
    for _ in range(rng.randint(1, 3)):
        container = _at(document, rng.choice(_containers(document)))
        keys = list(container) if isinstance(container, dict) else list(range(len(container)))
        if not keys:
            continue
        key = rng.choice(keys)
        action = rng.randrange(5)
        if action == 0:
            container[key] = copy.deepcopy(rng.choice(EXTREMES))
        elif action == 1 and isinstance(container, dict):
            del container[key]
        elif action == 2 and isinstance(container, dict):
            container[f"{key}_renamed"] = container.pop(key)
        elif action == 3 and isinstance(container, list):
            container.extend(copy.deepcopy(container) * rng.randint(1, 50))
        else:
            nested: Any = container[key]
            for _ in range(rng.choice((2, 50, 300))):
                nested = [nested]
            container[key] = nested
    return document


def _mutate_bytes(rng: random.Random, data: bytes) -> bytes:
    data = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        at = rng.randrange(len(data))
        choice = rng.randrange(3)
        if choice == 0:
            data[at] = rng.randrange(256)
        elif choice == 1:
            del data[at:]
        else:
            data[at:at] = rng.choice((b"[", b"{", b'"', b"\\u", b"9" * 50, b"\xff"))
        if not data:
            break
    return bytes(data)


def _serialized(document: dict[str, Any]) -> bytes:
    return json.dumps(document).encode("utf-8", "surrogatepass")


def test_every_hostile_companion_is_read_or_refused_and_what_is_read_analyses(tmp_path: Path):
    rng = random.Random(CI_SEED)
    seed = _seed()
    profile = tmp_path / "vm.xplane.pb"
    read = refused = 0
    for n in range(CI_INPUTS):
        spoil_bytes = rng.random() < BYTES_SHARE
        data = _mutate_bytes(rng, _serialized(seed)) if spoil_bytes else _serialized(_mutate_json(rng, seed))
        path = write_companion(profile, data)
        try:
            recordings = registry.read_recordings(str(path))
        except LeakfinderError as exc:
            assert exc.message.startswith(f"{path}: "), (n, exc.message)
            refused += 1
            continue
        read += 1
        loop = _loop()
        loop.recordings = recordings
        body = host_json(analyze_host(loop), [])
        json.dumps(body, allow_nan=False)
    # The mutations reach both sides: a mutator that spoiled every input, or none, would test nothing.
    assert read > CI_INPUTS // 20 and refused > CI_INPUTS // 4, (read, refused)
