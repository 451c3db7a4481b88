#!/usr/bin/env bash
# Every test of tb_leakfinder, from a fresh machine: installs what the tests need, then runs
# the Python suite (pytest) and the browser suite (node + Debian's chromium).
set -euo pipefail
cd "$(dirname "$0")/.."

python -m pip install --quiet --disable-pip-version-check ".[test]"
# The tests import the source tree: build the compiled scanner there too, and let its tests
# fail rather than skip when it is missing.
python setup.py --quiet build_ext --inplace
export TB_LEAKFINDER_REQUIRE_SCANNER=1
# The capture tests fail rather than skip when TensorFlow, JAX or PyTorch did not install.
export TB_LEAKFINDER_REQUIRE_FRAMEWORKS=1
if ! command -v chromium >/dev/null 2>&1; then
  apt-get update && apt-get install -y chromium
fi
(cd frontend && npm ci --no-audit --no-fund)

echo "== static checks"
ruff check .
ruff format --check .
mypy  # --strict over tb_leakfinder/ (mypy.ini)
python tools/compile_proto.py --check
python tools/gen_scanner_tables.py --check  # the scanner's tables against read/formats/xplane/stat_spec.py
python tools/gen_wire_types.py --check  # frontend/src/wire.ts and docs/http_api.md's tables against wire/schema.py
(cd frontend && npm run --silent typecheck && npm run --silent check-bundle)
# The logic both Python and TypeScript hold, against the case files of tests/cases/ (pytest reads them too).
(cd frontend && npm run --silent test-cases)
# src/wire.ts's types (the schema's) against every route's real answers on the demo runs and the accuracy captures.
(cd frontend && npm run --silent check-types)

echo "== python tests"
python -m pytest -q  # tests/unit, tests/integration and tests/fuzz (pytest.ini: testpaths = tests)

echo "== small benchmarks (ratios to their peers, failing only past twice those in benchmarks/ci_ratios.json)"
python benchmarks/bench_torch_trace.py --ci
python benchmarks/bench_memory.py --ci

echo "== leak accuracy benchmark (real captures against their truth files)"
python benchmarks/accuracy/score.py

echo "== browser tests"
(cd frontend && npm test)
