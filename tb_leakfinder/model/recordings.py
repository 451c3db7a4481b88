"""What the capture helper recorded inside the training process beside a profile (its companion file,
`<host>.leakfinder.json`): the references that hold the window's never-freed buffers, the process's own memory and
its children's at each step, and the text of the source lines the report names. See docs/recordings.md."""

from __future__ import annotations

from dataclasses import dataclass, field

# RecorderStatus: how a recorder's window ended.
COMPLETE = "complete"  # it ran to the end of its window
PARTIAL = "partial"  # a bound (objects visited, time) was hit: what it found is true, but not everything
FAILED = "failed"  # it stopped with an error, which its `warning` says; the training loop went on
RECORDER_STATUSES = (COMPLETE, PARTIAL, FAILED)

# HolderRecord.kind: where the reference a user would recognise lives.
HOLDER_KINDS = (
    "list",  # an element of a list, tuple, deque or set
    "dict_entry",  # a dict's value: metrics['loss_map']
    "attribute",  # an instance attribute: model.heads
    "class_attribute",  # an attribute of a class: ScaledSiLU.cache
    "default_argument",  # a function's mutable default: rotary_table's _memo
    "closure",  # a closure cell of a function
    "frame_local",  # a local of a running function: train()'s total
    "global",  # a module-level name
    "module",  # a torch.nn.Module's parameter or submodule
    "buffer",  # a torch.nn.Module's registered buffer
    "autograd_graph",  # tensors saved by an autograd graph reached from a live tensor's grad_fn
    "variable",  # a tf.Variable's value
)

# HolderRecord.match: how its never-freed buffers were matched to the objects it holds.
ADDRESS = "address"  # an object's buffer address is the buffer's (PyTorch; TensorFlow and JAX on CPU)
SHAPE = "shape"  # no address matched: by (shape, dtype) and count, where no more objects are alike than buffers
HOLDER_MATCHES = (ADDRESS, SHAPE)


@dataclass
class HolderRecord:
    """One reference that keeps some of the window's never-freed buffers alive."""

    path: str  # the access path in the user's terms: "model.heads", "metrics['loss_map']", "total"
    kind: str  # one of HOLDER_KINDS
    type_name: str  # the holder's type: "ModuleList", "list", "Tensor"
    created: str  # where the holder was made, "train.py:40 in train"; "" when not known
    addresses: list[int]  # the never-freed buffers' addresses it keeps (at most MAX_ADDRESSES listed)
    count: int  # how many never-freed buffers it keeps (may exceed len(addresses))
    bytes: int  # their bytes
    # How its buffers were matched to the objects it holds: ADDRESS, or SHAPE when no address did and its objects
    # were matched by their (shape, dtype) and count (its count and bytes are exact; which addresses are not known).
    match: str = ADDRESS


@dataclass
class HolderSearchRecord:
    """The holder finder's result for one window."""

    status: str  # COMPLETE, PARTIAL or FAILED
    warning: str  # why it is partial or failed; "" when complete
    objects_visited: int
    elapsed_s: float
    holders: list[HolderRecord] = field(default_factory=list)
    unmatched_count: int = 0  # never-freed buffers of the window no holder was found for
    unmatched_bytes: int = 0
    # Of those, the ones whose (shape, dtype) more live objects have than there are such buffers: no holder named.
    ambiguous_count: int = 0
    ambiguous_bytes: int = 0


@dataclass
class ProcessReading:
    """One process's memory at one step boundary, in bytes; None where the platform does not give it."""

    pid: int
    rss: int
    uss: int | None
    pss: int | None


@dataclass
class ProcessSample:
    """The training process and its children (DataLoader workers) at the end of one step."""

    step: int
    time_ns: int  # since the epoch
    main: ProcessReading
    children: list[ProcessReading] = field(default_factory=list)
    # What glibc's malloc held in the training process (mallinfo2): in use (`uordblks` + `hblkhd`), and free
    # (`fordblks`: memory the program freed that malloc keeps, which RSS counts once touched). None where malloc does
    # not say (not glibc 2.33 or later).
    malloc_in_use: int | None = None
    malloc_free: int | None = None


@dataclass
class ProcessMemoryRecord:
    """The process-memory recorder's readings over one window."""

    status: str  # COMPLETE, PARTIAL (switched off part-way) or FAILED
    warning: str
    source: str  # "psutil" or "proc"
    samples: list[ProcessSample] = field(default_factory=list)


@dataclass
class Recordings:
    """A companion file read back: what each recorder wrote, None for a recorder that was off."""

    version: int
    host: str
    pid: int
    framework: str  # "tensorflow", "jax" or "torch"
    holders: HolderSearchRecord | None = None
    process_memory: ProcessMemoryRecord | None = None
    sources: dict[str, str] = field(default_factory=dict)  # "path/to/train.py:134" -> that line's text, stripped


# The companion file: its name beside a profile's, what it says it is, and the bounds a reader holds it to.
RECORDINGS_SUFFIX = ".leakfinder.json"  # replaces the profile file's own suffix: <host>.xplane.pb -> <host>.leakfinder.json
RECORDINGS_FORMAT = "tb_leakfinder.recordings"
RECORDINGS_VERSION = 1  # the newest version a reader knows
MAX_COMPANION_BYTES = 1 << 20
MAX_ADDRESSES = 4096  # addresses listed per holder
