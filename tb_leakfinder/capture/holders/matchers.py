"""Each framework's objects as the walk sees them: which own a never-freed buffer (by its address, as the profile
records it) and what they lead to that Python's references do not show.

- PyTorch: a tensor owns its storage (`untyped_storage().data_ptr()`, a trace's `Addr`, shared by every view);
  it leads to its `.grad`, its `._base` and its `.grad_fn`, whose graph leads through `next_functions` to the
  tensors each node saved (`_saved_self`, a custom Function's `saved_tensors` and `ctx` attributes). An
  nn.Module leads to its submodules, parameters and buffers by their names, not through its `_modules` dicts.
- TensorFlow (eager, on CPU): an EagerTensor owns `_numpy().ctypes.data` and a tf.Variable its read value's, the
  `addr` of the MemoryAllocation that made the buffer (the BFC allocator's).
- JAX: an Array owns its shards' `unsafe_buffer_pointer()`.
Everything is read through the frameworks' own C descriptors and methods, never a user subclass's override.
"""

from __future__ import annotations

import contextlib
import sys
import types
import warnings
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from tb_leakfinder.capture.holders.walk import (
    ATTR,
    BASE,
    GRAD,
    GRAD_FN,
    MATCHER_PLANS,
    MODULE_BUFFER,
    NEXT_FUNCTION,
    SAVED,
    SUBMODULE,
    class_dict,
    derives,
    descriptor,
    mro,
)

if TYPE_CHECKING:
    from tb_leakfinder.capture.holders.walk import Walk

TENSOR, NODE, NN_MODULE = MATCHER_PLANS, MATCHER_PLANS + 1, MATCHER_PLANS + 2
EAGER_TENSOR, VARIABLE = MATCHER_PLANS + 10, MATCHER_PLANS + 11
ARRAY = MATCHER_PLANS + 20
_MODULE_REGISTRIES = {"_modules": SUBMODULE, "_parameters": SUBMODULE, "_buffers": MODULE_BUFFER}
# A graph node's fields that lead to tensors: its saved ones, a custom Function's, an AccumulateGrad's parameter.
_NODE_FIELDS = ("saved_tensors", "variable")


class TorchMatcher:
    def __init__(self, torch: types.ModuleType) -> None:
        self.torch = torch
        base = torch._C.TensorBase
        self._tensor = base
        self._module = torch.nn.Module
        nn = torch.nn
        self._containers = (nn.ModuleList, nn.ModuleDict, nn.Sequential, nn.ParameterList, nn.ParameterDict)
        self._fields = {name: base.__dict__[name] for name in ("grad", "_base", "grad_fn")}
        self._storage = base.__dict__["untyped_storage"]
        self._node_fields: dict[int, tuple[tuple[str, Any], ...]] = {}
        self._keep: list[type] = []

    @contextlib.contextmanager
    def session(self) -> Iterator[None]:
        """Around the walk: a tensor subclass's __torch_function__ never runs, and reading a non-leaf's .grad warns
        nobody."""
        with self.torch._C.DisableTorchFunction(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield

    def plan(self, cls: type) -> int | None:
        if derives(cls, self._tensor):
            return TENSOR
        if derives(cls, self._module):
            return NN_MODULE
        if type(descriptor(cls, "next_functions")) is types.GetSetDescriptorType:
            return NODE
        return None

    def container(self, cls: type, plan: int) -> bool:
        return plan == NODE or (plan == NN_MODULE and any(derives(cls, c) for c in self._containers))

    def addresses(self, obj: Any, plan: int) -> Iterable[int]:
        if plan != TENSOR:
            return ()
        try:
            return (int(self._storage(obj).data_ptr()),)
        except Exception:  # noqa: BLE001 - a tensor without storage (sparse, meta, a wrapper subclass)
            return ()

    def children(self, obj: Any, plan: int, walk: Walk) -> Iterator[tuple[int, object, Any]]:
        if plan == TENSOR:
            yield GRAD, None, self._fields["grad"].__get__(obj)
            yield BASE, None, self._fields["_base"].__get__(obj)
            yield GRAD_FN, None, self._fields["grad_fn"].__get__(obj)
        elif plan == NN_MODULE:
            for edge, name, value in walk.instance_children(obj):
                registry = _MODULE_REGISTRIES.get(name) if type(name) is str else None
                if registry is not None and type(value) is dict:
                    for key, item in value.items():
                        yield registry, key, item
                else:
                    yield edge, name, value
        elif plan == NODE:
            yield from self._node_children(obj, walk)

    def _node_children(self, node: Any, walk: Walk) -> Iterator[tuple[int, object, Any]]:
        cls = type(node)
        for i, pair in enumerate(descriptor(cls, "next_functions").__get__(node)):
            yield NEXT_FUNCTION, i, pair[0]
        for name, field in self._fields_of(cls):
            try:
                value = field.__get__(node)
            except Exception:  # noqa: BLE001 - saved tensors already freed by a backward pass
                continue
            yield SAVED, name, value
        dict_field = descriptor(cls, "__dict__")
        if type(dict_field) is types.GetSetDescriptorType:  # a custom Function's ctx attributes
            attributes = dict_field.__get__(node)
            if type(attributes) is dict:
                for name, value in attributes.items():
                    yield ATTR, name, value

    def _fields_of(self, cls: type) -> tuple[tuple[str, Any], ...]:
        fields = self._node_fields.get(id(cls))
        if fields is None:
            found = {}
            for c in reversed(mro(cls)):
                for name, value in class_dict(c).items():
                    if type(value) is types.GetSetDescriptorType and (name.startswith("_saved_") or name in _NODE_FIELDS):
                        found[name] = value
            fields = self._node_fields[id(cls)] = tuple(found.items())
            self._keep.append(cls)
        return fields


class TensorflowMatcher:
    def __init__(self, tf: types.ModuleType) -> None:
        ops = sys.modules[f"{tf.__name__}.python.framework.ops"]
        variables = sys.modules[f"{tf.__name__}.python.ops.resource_variable_ops"]
        self._eager = ops._EagerTensorBase
        self._variable = variables.BaseResourceVariable
        self._numpy = ops._EagerTensorBase._numpy
        self._value = variables.BaseResourceVariable.value

    def session(self) -> contextlib.AbstractContextManager[object]:
        return contextlib.nullcontext()

    def plan(self, cls: type) -> int | None:
        if derives(cls, self._eager):
            return EAGER_TENSOR
        if derives(cls, self._variable):
            return VARIABLE
        return None

    def addresses(self, obj: Any, plan: int) -> Iterable[int]:
        try:
            tensor = self._value(obj) if plan == VARIABLE else obj
            # On CPU, _numpy() hands the tensor's own buffer (no copy): its address is the allocation's.
            return (int(self._numpy(tensor).ctypes.data),)
        except Exception:  # noqa: BLE001 - a string or resource tensor, an uninitialized variable
            return ()

    def children(self, obj: Any, plan: int, walk: Walk) -> Iterator[tuple[int, object, Any]]:
        return iter(())

    def container(self, cls: type, plan: int) -> bool:
        return False


class JaxMatcher:
    def __init__(self, jax: types.ModuleType) -> None:
        self._array = jax.Array

    def session(self) -> contextlib.AbstractContextManager[object]:
        return contextlib.nullcontext()

    def plan(self, cls: type) -> int | None:
        return ARRAY if derives(cls, self._array) else None

    def addresses(self, obj: Any, plan: int) -> Iterable[int]:
        return buffer_pointers(obj)

    def children(self, obj: Any, plan: int, walk: Walk) -> Iterator[tuple[int, object, Any]]:
        return iter(())

    def container(self, cls: type, plan: int) -> bool:
        return False


def shard_buffers(array: Any) -> list[tuple[int, int]]:
    """A JAX array's device buffers, one per addressable shard (a replicated array's each hold it whole): (pointer,
    bytes) each; none for a deleted array."""
    try:
        return [(int(s.data.unsafe_buffer_pointer()), int(s.data.nbytes)) for s in array.addressable_shards]
    except Exception:  # noqa: BLE001 - deleted, donated, or on a backend without pointers
        return []


def buffer_pointers(array: Any) -> list[int]:
    return [pointer for pointer, _ in shard_buffers(array)]


def matcher(framework: str, module: types.ModuleType) -> TorchMatcher | TensorflowMatcher | JaxMatcher | None:
    """The framework's matcher, None when this version of it lacks what matching needs."""
    try:
        if framework == "torch":
            return TorchMatcher(module)
        if framework == "tensorflow":
            return TensorflowMatcher(module)
        if framework == "jax":
            return JaxMatcher(module) if callable(getattr(module, "live_arrays", None)) else None
    except (AttributeError, KeyError):
        return None
    return None
