#!/usr/bin/env bash
# The fast loop (CONTRIBUTING.md, "The fast loop"): lint, types, the generated files and the unit tests but
# the slow ones, without the frameworks, the browser or the benchmarks. `bash tests/run.sh` is the whole check.
# Arguments go to pytest: `bash tests/quick.sh -k scan`, `bash tests/quick.sh -x`.
set -euo pipefail
cd "$(dirname "$0")/.."

ruff check .
ruff format --check .
mypy  # --strict over tb_leakfinder/ (mypy.ini); its cache makes a second run take seconds
python tools/gen_scanner_tables.py --check
python tools/gen_wire_types.py --check
# The descriptor set's check needs grpcio-tools (the test extra).
if python -c "import grpc_tools" 2>/dev/null; then python tools/compile_proto.py --check; fi
python -m pytest tests/unit -q -m "not slow" "$@"
