"""Where a buffer was made, as far as its profile tells: the program and program buffer, and the line of code."""

from __future__ import annotations

from dataclasses import dataclass

# Site.context: what the host was doing when the buffer was allocated.
CONTEXT_PROGRAM = "program"  # running a compiled program (an XLA module)
CONTEXT_TRANSFER = "transfer"  # copying host data to the device, outside any program
CONTEXT_OUTSIDE = "outside"  # neither: a runtime buffer, outside any program
# Site.match: how a program's allocation was tied to one of its buffers.
MATCH_EXACT = "exact"  # one buffer of the program has this size
MATCH_AMBIGUOUS = "ambiguous"  # several have it: Site.candidates names them, Site.buffer the one taken in order
MATCH_NEAR = "near"  # none has it exactly; its temporaries are within a few KiB of it
MATCH_NONE = "none"  # no buffer of the program comes close
MATCH_NO_HLO = "no_hlo"  # the program's HLO is not in the profile
# Site.near_by: the evidence a MATCH_NEAR rests on.
NEAR_BY_TIME = "time"  # the program was found by time alone: the one running on the allocation's device then
NEAR_BY_SIZE = "size"  # the program is known, but none of its buffers has the size: its temporaries are a few KiB off
NEAR_BY_TIME_AND_SIZE = "time_and_size"  # both


@dataclass(frozen=True)
class SiteInfo:
    """One place buffers are made. Site() (index 0 of every table) is a place the profile does not tell."""

    context: str = ""  # CONTEXT_*, "" when only the framework's op (TensorFlow's tf_op) or frames are known
    program: str = ""  # the program's key, "jit_train_step(12)", as the static view lists it
    buffer: str = ""  # of the program: "output 0", "parameter 1", "temporaries", "constant"
    allocation: int = -1  # the program's allocation index (the static view's row), -1 when none
    hlo_op: str = ""  # the HLO instruction's op: its op_name's last part ("dot_general"), else its opcode
    op_name: str = ""  # the framework's scope of it, "jit(train_step)/jvp()/dot_general"
    hlo_shape: str = ""  # "f32[1024,1024]"
    source: str = ""  # the instruction's source file and line, "/src/model.py:57"
    match: str = ""  # MATCH_*, "" outside a program
    near_by: str = ""  # NEAR_BY_* when the match is MATCH_NEAR, else ""
    candidates: tuple[str, ...] = ()  # the program buffers of this size, when more than one could be it
    stack: tuple[str, ...] = ()  # the user's Python frames around the allocation, innermost first: "train.py:42 in step"
    # The innermost frame of a model library below the user's line: "Owlv2Attention.forward (modeling_owlv2.py:410)".
    model_frame: str = ""
    # Which frame of `stack` tells its buffers apart (analyses/frames.telling_frames): below a helper that many
    # allocations share, the line that called it.
    telling: int = 0

    @property
    def where(self) -> str:
        """The line of code: the program's source line ("model.py:57"), else the user frame that tells its buffers
        apart (the innermost, unless that is a helper many allocations share), else ""."""
        if self.source:
            return self.source.replace("\\", "/").rsplit("/", 1)[-1]
        return self.stack[self.telling] if self.stack else ""


NO_SITE = SiteInfo()
