"""Compile tb_leakfinder's .proto schemas into the descriptor set the package loads.

The package ships the serialized FileDescriptorSet instead of generated *_pb2
modules, so it works with any protobuf runtime >= 4.21 whatever protoc made it.
Run after editing a .proto; `--check` fails when the committed set is stale.
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import tempfile

from google.protobuf import descriptor_pb2
from grpc_tools import protoc

PROTO_DIR = pathlib.Path(__file__).resolve().parent.parent / "tb_leakfinder" / "proto"
OUTPUT = PROTO_DIR / "schema.binpb"


def compile_schema() -> bytes:
    sources = sorted(p.name for p in PROTO_DIR.glob("*.proto"))
    with tempfile.TemporaryDirectory() as tmp:
        out = pathlib.Path(tmp) / "set.binpb"
        code = protoc.main(["protoc", f"-I{PROTO_DIR}", f"--descriptor_set_out={out}", *sources])
        if code != 0:
            sys.exit(f"protoc failed with exit code {code}")
        fds = descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes())
    # Deterministic bytes, so --check compares schemas and not serializer order.
    return fds.SerializeToString(deterministic=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true", help="fail if the committed set is stale")
    args = parser.parse_args()
    data = compile_schema()
    if args.check:
        if not OUTPUT.exists() or OUTPUT.read_bytes() != data:
            sys.exit(f"{OUTPUT} is stale: run python tools/compile_proto.py")
        print(f"{OUTPUT.name} is up to date")
        return
    OUTPUT.write_bytes(data)
    print(f"wrote {OUTPUT} ({len(data)} bytes)")


if __name__ == "__main__":
    main()
