"""Message classes for the project's own XSpace, HLO and pprof schemas.

The schemas live in `xplane.proto`, `hlo.proto` and `pprof.proto` beside this
file; `schema.binpb` is their compiled descriptor set (see tools/compile_proto.py).
"""

from __future__ import annotations

import functools
import importlib.resources
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from google.protobuf.descriptor_pool import DescriptorPool
    from google.protobuf.message import Message


@functools.cache
def _pool() -> DescriptorPool:
    # Imported here: the compiled scanner reads profiles without protobuf, so cold starts skip it.
    from google.protobuf import descriptor_pb2, descriptor_pool

    data = importlib.resources.files(__package__).joinpath("schema.binpb").read_bytes()
    pool = descriptor_pool.DescriptorPool()
    for file_proto in descriptor_pb2.FileDescriptorSet.FromString(data).file:
        pool.Add(file_proto)
    return pool


def message_class(full_name: str) -> type[Message]:
    """The message class for e.g. 'tb_leakfinder.xplane.XSpace'."""
    from google.protobuf import message_factory

    cls: type[Message] = message_factory.GetMessageClass(_pool().FindMessageTypeByName(full_name))
    return cls


def XSpace() -> type[Message]:  # noqa: N802 - named after the message it returns
    return message_class("tb_leakfinder.xplane.XSpace")


def HloProto() -> type[Message]:  # noqa: N802
    return message_class("tb_leakfinder.hlo.HloProto")


def PprofProfile() -> type[Message]:  # noqa: N802
    return message_class("tb_leakfinder.pprof.Profile")
