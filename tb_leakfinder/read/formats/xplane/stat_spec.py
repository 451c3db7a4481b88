"""The XSpace stats the decoders read, and the memory-event columns they fill: one table for both decoders.

The reference decoder (decoder.py) reads it as it is. The compiled scanner's
tables are written from it into `_xspace_scan_tables.h` by
`python tools/gen_scanner_tables.py` (CI runs it with `--check`, which fails
when the header is stale). The columns and their dtypes are the model's
(model/memory.py EVENT_COLUMNS): this table says only how XProf's stats map
into them.

An integer stat is one row of FILLS, e.g. `Fill("step_id", INT, ("id",))` for
the raw step id TF writes, then the generator and a rebuild; its column is
declared in the model.
"""

from __future__ import annotations

from typing import NamedTuple

# How a stat's value becomes its column's. Every integer kind takes an int64 or a uint64 stat.
INT = "int"  # as int64, into an int64 column
STRING = "string"  # a ref_value or str_value, interned into MemoryEvents.strings (default 0, the "")
UINT64 = "uint64"  # modulo 2**64, into a uint64 column
INT32 = "int32"  # wrapped to int32, into an int32 column
FLOAT = "float"  # a double, or an integer as a double, into a float64 column
# INT and STRING take any number of columns; the scanner keeps the others in fields of their own, one column each.


class Fill(NamedTuple):
    """A memory-event column and the stats that fill it (the last of them on an event wins)."""

    column: str
    kind: str
    stats: tuple[str, ...]
    default: int | float = 0  # the column's value on an event that has none of its stats


# The columns an event gives by itself: its time, which of MemoryAllocation / MemoryDeallocation it is, and the
# position of its line (its thread) in the plane.
EVENT_FIELDS = ("time_ps", "kind", "line")
# The column of the event's memory id, which XProf keys by the last of these stats on the event:
# an integer id, or an allocator's name.
ALLOCATOR_COLUMN = "allocator"
INT_ID_STATS = ("index_on_host", "device_ordinal")
NAME_ID_STAT = "allocator_name"

# Stats of the other /host:CPU events: a step marker's number, a root event's flag, and the group of any
# event (of memory events too, where it is also a column).
STEP_STAT = "step_num"
ROOT_STAT = "_r"
GROUP_STAT = "group_id"
# Stats of any event that are kept on its span: the flow ids that tie a producer (`_p`) to its consumers (`_c`),
# and a kernel launch's program (`program_id`, also a module's on /host:metadata).
FLOW_OUT_STAT = "_p"
FLOW_IN_STAT = "_c"
# Stats of /host:metadata's event metadata: a module's HloProto and program id (read/hlo.py).
HLO_PROTO_STAT = "Hlo Proto"
PROGRAM_ID_STAT = "program_id"
# The stats of the other events, which the scanner reads in one run of roles.
HOST_STATS = (STEP_STAT, ROOT_STAT, GROUP_STAT, FLOW_OUT_STAT, FLOW_IN_STAT, PROGRAM_ID_STAT)

# The memory events' stats, by column.
FILLS = (
    Fill("addr", UINT64, ("addr",)),
    Fill("requested_bytes", INT, ("requested_bytes",)),
    Fill("chunk_bytes", INT, ("allocation_bytes",)),
    Fill("heap_bytes", INT, ("bytes_allocated",)),
    Fill("stack_bytes", INT, ("bytes_reserved",)),
    Fill("free_bytes", INT, ("bytes_available",)),
    Fill("allocator_peak_bytes", INT, ("peak_bytes_in_use",)),
    Fill("fragmentation", FLOAT, ("fragmentation",), 0.0),
    Fill("op", STRING, ("tf_op",)),
    Fill("shape", STRING, ("shape",)),
    Fill("region", STRING, ("region_type",)),
    Fill("dtype", INT32, ("data_type",), -1),
    Fill("group_id", INT, (GROUP_STAT,), -1),
)
FILL_OF_STAT = {stat: fill for fill in FILLS for stat in fill.stats}
