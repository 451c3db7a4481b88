"""Names XProf gives: a session's host files and HLO modules, and the allocator that records only large blocks."""

XPLANE_SUFFIX = ".xplane.pb"
HLO_SUFFIX = ".hlo_proto.pb"  # XProf's cache of a session's HLO modules, one per module
# oneDNN's CPU allocator, TensorFlow's on x86 without TF_CPU_ALLOCATOR_USE_BFC=true. It hands small buffers out
# of a pool that records no memory events, so its profile holds only the large blocks.
MKLCPU_ID = "mklcpu"
