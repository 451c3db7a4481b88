"""The XSpace format's entry in the registry: its hosts, its cache-key companions, reading one host."""

from __future__ import annotations

from tb_leakfinder.errors import LeakfinderError
from tb_leakfinder.model.hlo import HloModule
from tb_leakfinder.read.formats.base import HostReading
from tb_leakfinder.read.formats.xplane import hlo
from tb_leakfinder.read.formats.xplane.names import HLO_SUFFIX, XPLANE_SUFFIX
from tb_leakfinder.read.formats.xplane.reader import read_host


class XplaneFormat:
    name = "xplane"

    def sniff(self, path: str) -> bool:
        return path.endswith(XPLANE_SUFFIX)

    def host_name(self, file_name: str) -> str | None:
        if file_name.endswith(XPLANE_SUFFIX) and len(file_name) > len(XPLANE_SUFFIX):
            return file_name[: -len(XPLANE_SUFFIX)]
        return None

    def companions(self, names: list[str]) -> tuple[str, ...]:
        # XProf writes one per module when the Profile tab first opens a session: a stored analysis goes stale.
        return tuple(sorted(n for n in names if n.endswith(HLO_SUFFIX)))

    def read(self, path: str, host: str, session_dir: str) -> HostReading:
        profile = read_host(path, host)
        try:
            protos = {**hlo.session_hlo_files(session_dir), **profile.hlo_protos}
        except LeakfinderError as exc:  # XProf's cache files are a bonus: the plane still counts
            profile.warnings.append(str(exc))
            protos = dict(profile.hlo_protos)
        modules, decode_warnings = hlo.decode_modules(protos, path)
        profile.warnings.extend(decode_warnings)
        return HostReading(profile, modules, protos)

    def module(self, hlo_protos: dict[str, bytes], name: str, source: str) -> HloModule:
        return hlo.read_module(hlo_protos, name, source)


XPLANE = XplaneFormat()
