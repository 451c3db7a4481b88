"""The user's Python frames among those the profiler's Python tracer recorded.

The tracer names a Python function `$<file>.py:<first line> <function>` by its
file's base name, and a C function `$<module> <function>`. A frame is the
framework's when its file is in a site-packages or the standard library (a
whole path tells), when a path relative to an import root (PyTorch's tracer
writes `torch/nn/modules/module.py`) begins with a framework's or the standard
library's package, or, for a base name, when the file is one of the
frameworks' or Python's own modules (framework_files.py). Files users often
name their own code (model.py, utils.py, ...) that a framework also has count
as the framework's only inside another of its frames, and a file that the
profile's programs name as their source is always the user's. tb_leakfinder's
own capture modules are never the user's.

Below the user's line, the innermost frame of a model library (transformers,
diffusers, timm, flax, torch.nn's modules; by a base name, transformers'
`modeling_*.py`) says which layer made a buffer. Its class is the one a module
call around it names (PyTorch's `nn.Module: Owlv2Attention_0`, a host call
`$class Owlv2Attention`), when only frameworks' frames lie between (torch.nn's
Module plumbing, no_grad's wrapper).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable, Sequence

from tb_leakfinder.analyses.framework_files import FRAMEWORK_FILES
from tb_leakfinder.model.memory import LINE_CALL_PREFIX, MODULE_CALL_PREFIX, PYTHON_CALL_PREFIX, python_call_name

# Frames kept per site, innermost first.
MAX_FRAMES = 8
# "$train.py:42 train_step"; the function may hold spaces ("<lambda>", "<genexpr>" do not, but be lenient). A
# Windows path opens with its drive (C:\research\client.py), the one colon a file may hold.
_FRAME_NAME = r"(?P<file>(?:[A-Za-z]:)?[^:]*\.py):(?P<line>\d+) (?P<function>.+)$"
_PYTHON_FRAME = re.compile(f"^{re.escape(PYTHON_CALL_PREFIX)}{_FRAME_NAME}")
# The capture helper's mark of the line a frame ran when it called a torch op (model/memory.LINE_CALL_PREFIX).
_LINE_CALL = re.compile(f"^{re.escape(LINE_CALL_PREFIX)}{_FRAME_NAME}")
_SEPARATORS = re.compile(r"[/\\]")
_LIBRARY_PARTS = ("site-packages", "dist-packages")
WINDOWS_STDLIB = "Lib"  # Python on Windows keeps its standard library in <prefix>\Lib, beside Lib\site-packages
# Top-level packages of ML frameworks and the libraries around them, whose relative paths are never the user's code.
FRAMEWORK_PACKAGES = frozenset(
    """
    absl accelerate apex chex datasets deepspeed diffusers einops equinox fairscale flax functorch haiku huggingface_hub
    jax jaxlib keras lightning megatron ml_dtypes numpy optax orbax pandas peft pytorch_lightning safetensors scipy
    sklearn tensorboard tensorflow tf_keras timm tokenizers torch torchaudio torchvision tqdm transformers tree triton
    xformers
    """.split()  # noqa: SIM905 - one word per name keeps the list short
) | frozenset(sys.stdlib_module_names)
# tb_leakfinder's own capture code runs around the user's steps: never the user's line.
OWN_FILES = frozenset({"leak_capture.py", "framework_profiler.py", "server_session.py", "keras_callback.py", "torch_profiler.py"})
COMMON_USER_FILES = frozenset(
    """
    callbacks.py common.py config.py data.py dataset.py datasets.py eval.py evaluate.py inference.py layers.py loss.py
    losses.py main.py metrics.py model.py models.py modules.py net.py network.py optimizer.py optimizers.py predict.py
    preprocessing.py run.py test.py train.py utils.py
    """.split()  # noqa: SIM905 - one word per name keeps the list short
)


# Packages of models' own layers, and torch.nn's modules (whose base class's file is plumbing, not a layer).
MODEL_PACKAGES = frozenset({"transformers", "diffusers", "timm", "flax"})
TORCH_MODULES = ("torch", "nn", "modules")
TORCH_MODULE_PLUMBING = "module.py"
# transformers' model files, as a Python tracer names them by their base name: modeling_owlv2.py, modeling_tf_bert.py.
_MODEL_FILE = re.compile(r"modeling_\w+\.py")


def parse_frame(name: str) -> tuple[str, int, str] | None:
    """(file, first line, function) of a Python function event's name; None for a C function or another event."""
    match = _PYTHON_FRAME.match(name)
    if match is None:
        return None
    return match["file"], int(match["line"]), match["function"]


def base_name(file: str) -> str:
    """A path's file name, whether its separators are POSIX's or Windows' (`C:\\src\\train.py`, `\\\\host\\share\\a.py`)."""
    return _SEPARATORS.split(file)[-1]


def frame_text(file: str, line: int, function: str) -> str:
    """'train.py:42 in train_step' (the base name of a whole path)."""
    return f"{base_name(file)}:{line} in {function}"


def _is_library_path(file: str) -> bool:
    parts = _SEPARATORS.split(file)
    if any(p in _LIBRARY_PARTS for p in parts) or any(re.fullmatch(r"python3(\.\d+)?", p) for p in parts[:-1]):
        return True
    if "\\" in file and WINDOWS_STDLIB in parts[:-1]:
        return True
    relative = parts[0] not in ("", ".", "..") and not re.fullmatch(r"[A-Za-z]:", parts[0])
    return relative and parts[0] in FRAMEWORK_PACKAGES


def _model_file(file: str) -> bool:
    """Whether a frame's file is a model library's: relative to an import root or in a site-packages, or a
    transformers model file by its base name."""
    parts = _SEPARATORS.split(file)
    if len(parts) == 1:
        return bool(_MODEL_FILE.fullmatch(file))
    roots = [0, *(k + 1 for k, part in enumerate(parts[:-1]) if part in _LIBRARY_PARTS)]
    for k in roots:
        rest = parts[k:-1]
        if rest[:1] and rest[0] in MODEL_PACKAGES:
            return True
        if tuple(rest[:3]) == TORCH_MODULES and parts[-1] != TORCH_MODULE_PLUMBING:
            return True
    return False


def _at_marked_lines(names: Sequence[str]) -> list[str]:
    """The host call names (innermost first) with each line mark's line given to the frame it marks: the nearest
    enclosing frame of its file and function, whose name carries its first line (or, running when the profiler
    started, the line it was at then); a mark whose frame is not recorded stands as that frame."""
    out = list(names)
    for k, name in enumerate(names):
        mark = _LINE_CALL.match(name)
        if mark is None:
            continue
        out[k] = ""
        file, line, function = mark["file"], mark["line"], mark["function"]
        for j in range(k + 1, len(out)):
            frame = parse_frame(out[j])
            if frame is not None and base_name(frame[0]) == base_name(file) and frame[2] == function:
                out[j] = python_call_name(frame[0], line, function)
                break
        else:
            out[k] = python_call_name(file, line, function)
    return [name for name in out if name]


def _frames(names: Sequence[str], user_files: Iterable[str]) -> list[tuple[str, int, str, bool, bool, str]]:
    """The Python frames of a stack of host call names (innermost first), outermost first: (file, line, function,
    whether it is the user's, whether a model library's, the class a module call names for it or "")."""
    mine = set(user_files)
    inside = False
    found: list[tuple[str, int, str, bool, bool, str]] = []
    owner = ""  # the class of the module call being entered, until its first frame of the user or a model library
    for name in reversed(_at_marked_lines(names)):  # outermost first: a common name is the framework's only inside it
        if name.startswith(MODULE_CALL_PREFIX):
            owner = name[len(MODULE_CALL_PREFIX) :]
            continue
        frame = parse_frame(name)
        if frame is None:
            continue
        file, line, function = frame
        base = base_name(file)
        if base in mine:
            framework = False
        elif base in OWN_FILES:  # the capture helper's frames, by whatever path its tracer names them
            framework = True
        elif "/" in file or "\\" in file:
            framework = _is_library_path(file)
        else:
            common = base in FRAMEWORK_FILES and (inside or base not in COMMON_USER_FILES)
            framework = common or bool(_MODEL_FILE.fullmatch(base))
        inside = inside or framework
        model = _model_file(file)
        # torch.nn's Module plumbing and decorators (no_grad's wrapper) lie between a module call and its forward.
        passing = framework and not model
        found.append((file, line, function, not framework, model, "" if passing else owner))
        owner = owner if passing else ""
    return found


def python_frames(names: Sequence[str], user_files: Iterable[str] = ()) -> list[tuple[str, int, str, bool]]:
    """(file, first line, function, whether it is the user's) of each Python frame of a stack of host call names
    (innermost first), innermost first."""
    return [(file, line, function, users) for file, line, function, users, _, _ in reversed(_frames(names, user_files))]


def user_frames(names: Sequence[str], user_files: Iterable[str] = ()) -> tuple[str, ...]:
    """The user's frames of a stack of host call names (innermost first), innermost first, at most MAX_FRAMES.

    `user_files` are base names known to be the user's (the profile's programs name them as their source).
    """
    kept = [frame_text(file, line, function) for file, line, function, users, _, _ in _frames(names, user_files) if users]
    return tuple(reversed(kept))[:MAX_FRAMES]


def model_frame(names: Sequence[str], user_files: Iterable[str] = ()) -> str:
    """The innermost model library frame below the user's innermost frame of a stack of host call names
    (innermost first), "Owlv2Attention.forward (modeling_owlv2.py:410)" ("forward (...)" when no module call names
    its class); "" when there is none."""
    frames = _frames(names, user_files)
    users = [k for k, frame in enumerate(frames) if frame[3]]
    below = frames[users[-1] + 1 :] if users else frames
    models = [frame for frame in below if frame[4]]
    if not models:
        return ""
    file, line, function, _, _, owner = models[-1]
    return f"{owner + '.' if owner else ''}{function} ({base_name(file)}:{line})"


def telling_frames(stacks: Sequence[tuple[str, ...]]) -> dict[tuple[str, ...], int]:
    """Per distinct stack (innermost first), the index of the frame that tells its buffers apart from the others
    made through the same innermost frame: the first position at which those stacks' frames differ (among the
    stacks that reach it), so that a helper many allocations share (`allocate` of the program's backend) gives way
    to the line that called it (`init_weight`); 0 when they never differ, and for a stack that ends before it (a
    stack recorded without its callers is told apart by nothing). One rule for every format with Python stacks:
    a site's `where`, the families and breakdown rows it names, and the out-of-memory post-mortem all follow it."""
    through: dict[str, set[tuple[str, ...]]] = {}
    for stack in stacks:
        if stack:
            through.setdefault(stack[0], set()).add(stack)
    depth: dict[tuple[str, ...], int] = {}
    for group in through.values():
        at = _first_difference(group)
        for stack in group:
            depth[stack] = at if len(stack) > at else 0
    return depth


def _first_difference(stacks: set[tuple[str, ...]]) -> int:
    """The first position where the frames of the stacks long enough to have one differ; 0 when nowhere."""
    k = 1
    while True:
        frames = {stack[k] for stack in stacks if len(stack) > k}
        if not frames:
            return 0
        if len(frames) > 1:
            return k
        k += 1
