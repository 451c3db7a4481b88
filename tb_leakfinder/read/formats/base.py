"""The interface every input format implements, and what reading one host gives."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from tb_leakfinder.model.hlo import HloModule
from tb_leakfinder.model.memory import HostProfile


@dataclass
class HostReading:
    """One host read into the model, with the compiled programs its session holds."""

    profile: HostProfile  # its warnings include what could not be read of the programs
    modules: list[HloModule]  # decoded, sorted by key
    hlo_protos: dict[str, bytes]  # "<module>(<id>)" -> HloProto bytes, for the module route's detail


class ProfileFormat(Protocol):
    name: str  # "xplane"

    def sniff(self, path: str) -> bool:
        """Whether a file path a user gave is one host's profile in this format."""
        ...

    def host_name(self, file_name: str) -> str | None:
        """The host a file of a session folder holds, or None when it is not one of this format's hosts."""
        ...

    def companions(self, names: list[str]) -> tuple[str, ...]:
        """The names of a session folder that a host's analysis also depends on (in its cache key), sorted."""
        ...

    def read(self, path: str, host: str, session_dir: str) -> HostReading:
        """One host's file into the model; raises LeakfinderError naming the file."""
        ...

    def module(self, hlo_protos: dict[str, bytes], name: str, source: str) -> HloModule:
        """One compiled program of a host, by the name its summary gives; NotFoundError when it has none."""
        ...
