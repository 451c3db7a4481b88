"""The XSpace format's entry in the registry: its hosts, its cache-key companions, reading one host, its compiled
programs, and what it tells users."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tb_leakfinder.errors import LeakfinderError
from tb_leakfinder.read.formats.base import FormatHintsInfo, HostReading
from tb_leakfinder.read.formats.xplane.names import HLO_SUFFIX, XPLANE_SUFFIX

if TYPE_CHECKING:
    from collections.abc import Callable

    from tb_leakfinder.model.hlo import HloModule

HINTS = FormatHintsInfo(
    name="XProf profile",
    suffix=XPLANE_SUFFIX,
    layout=f"<run>/plugins/profile/<session>/<host>{XPLANE_SUFFIX}",
    capture=(
        "Capture with `tf.profiler.experimental.start(logdir)`, `jax.profiler.start_trace(logdir)` or"
        " `tb_leakfinder.capture(logdir)`, or with the Profile tab's Capture Profile."
    ),
    record_events=(
        "Memory events (MemoryAllocation / MemoryDeallocation) come from a BFC allocator. TensorFlow on CPU records"
        " them only when `TF_CPU_ALLOCATOR_USE_BFC=true` is set in the environment before TensorFlow is imported."
        " JAX on CPU emits none, because its CPU client has no BFC allocator; on GPU both TensorFlow and JAX record"
        " them."
    ),
    python_frames=(
        "No Python frames in this profile. For the line of Python that made each buffer, capture with "
        "tb_leakfinder.capture(logdir, python_tracer=True) (or its Keras callback), or with the Profile tab's "
        "Capture Profile at Python tracer level 1"
    ),
    memory_id_note=" in XProf's Memory Profile",
    xprof_tools=True,
)


class XplaneFormat:
    name = "xplane"
    hints = HINTS

    @property
    def max_file_bytes(self) -> int:
        from tb_leakfinder.read.formats.xplane import scan

        return scan.MAX_FILE_BYTES

    def sniff(self, path: str) -> bool:
        return path.endswith(XPLANE_SUFFIX)

    def host_name(self, file_name: str) -> str | None:
        if file_name.endswith(XPLANE_SUFFIX) and len(file_name) > len(XPLANE_SUFFIX):
            return file_name[: -len(XPLANE_SUFFIX)]
        return None

    def stem(self, file_name: str) -> str | None:
        return self.host_name(file_name)

    def companions(self, names: list[str]) -> tuple[str, ...]:
        # XProf writes one per module when the Profile tab first opens a session: a stored analysis goes stale.
        return tuple(sorted(n for n in names if n.endswith(HLO_SUFFIX)))

    def read_ahead(self, path: str, wanted: Callable[[], bool]) -> None:
        # The compiled scanner's part alone, which loads no numpy: without it there is nothing to overlap.
        from tb_leakfinder.read import read_ahead
        from tb_leakfinder.read.formats.xplane import scan

        scanner = scan.compiled_scanner()
        if scanner is not None:
            read_ahead.begin(path, lambda p: scan.scan_file(scanner, p), wanted)

    def read(self, path: str, host: str, session_dir: str) -> HostReading:
        from tb_leakfinder.read.formats.xplane import hlo, reader

        profile = reader.read_host(path, host)
        try:
            protos = {**hlo.session_hlo_files(session_dir), **profile.hlo_protos}
        except LeakfinderError as exc:  # XProf's cache files are a bonus: the plane still counts
            profile.warnings.append(str(exc))
            protos = dict(profile.hlo_protos)
        modules, decode_warnings = hlo.decode_modules(protos, path)
        profile.warnings.extend(decode_warnings)
        return HostReading(profile, modules, protos)

    def module(self, hlo_protos: dict[str, bytes], name: str, source: str) -> HloModule:
        from tb_leakfinder.read.formats.xplane import hlo

        return hlo.read_module(hlo_protos, name, source)


XPLANE = XplaneFormat()
