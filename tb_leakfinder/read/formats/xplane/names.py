"""The file names XProf gives a session's hosts and its HLO modules."""

XPLANE_SUFFIX = ".xplane.pb"
HLO_SUFFIX = ".hlo_proto.pb"  # XProf's cache of a session's HLO modules, one per module
