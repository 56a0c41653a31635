"""Content fingerprints: what makes two exports the same export.

A model's fingerprint covers its code, its configuration and its tensors:

* code: every class in the module tree, and every function or class its methods reach through
  module globals (a helper `forward` calls, a constant it reads, a plain attribute of a module
  it reads). Code of the project is hashed by its syntax tree without docstrings, so a comment
  or docstring edit is not a new model. Code of an installed library (site-packages, the
  standard library) counts by the library's version, but only where its module and qualname
  lead back to it: a class or function a factory made (`<locals>` in its name, as ExecuTorch's
  `module_factory(fn)` makes one `ModuleWrapper` per row), one made by `type()`, or one
  replaced after import is walked like project code, closures and globals included. A library
  class that lives at its name also counts by its plain class attributes and by any method
  set on it after import (what a run can change about it);
* configuration: every attribute of every module that nn.Module itself does not own, whatever
  its name or type: numbers and strings, containers, enums, dataclasses and config objects
  (walked), plain tensors and numpy arrays (by their bytes), held functions and hooks;
* tensors: parameters and buffers, by dtype, shape and bytes.

Two modules with equal fingerprints lower to the same .pte, and the same module has the same
fingerprint in every process: nothing that follows the hash seed, an id or an address counts.

What the walk does not follow: the contents of a library module's dicts and lists (registries,
caches) that library code reads; a run that mutates one in place changes behaviour the key
cannot see. The served-program guard (hil.artifacts.probe) catches that kind of collision: a
program served from the cache is compared, through its recorded eager outputs, with the model
asking for it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import enum
import functools
import hashlib
import inspect
import sys
import types
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import torch

from hil.artifacts.libraries import library_of
from hil.artifacts.source_digest import class_source_digest, module_source_digest, source_digest

_PLAIN = (int, float, complex, str, bytes, bool, type(None))
MAX_DEPTH = 12  # config objects nest; deeper than this is a cycle or a runtime handle
# Fields of library objects that hold a value following the process's hash seed, each derived
# from fields that are hashed anyway: hashing them would give every process a new key (tiny_opt
# was exported again on every run). By name, not by a rule: a field a rule skipped by mistake
# would be a setting two different models share a key over.
SEEDED_FIELDS = frozenset(
    {
        # GenerationConfig keeps hash(self.to_json_string()) to see later edits
        ("transformers", "_original_object_hash"),
    }
)


@functools.cache
def _module_internals() -> frozenset[str]:
    """Attributes every nn.Module has (its tensors and children are hashed on their own)."""
    return frozenset(vars(torch.nn.Module())) - {
        "_forward_hooks",
        "_forward_pre_hooks",
        "_forward_hooks_with_kwargs",
        "_forward_pre_hooks_with_kwargs",
    }


class _Walk:
    """One fingerprint's walk over code and configuration, each object visited once."""

    def __init__(self, digest: Any) -> None:
        self.digest = digest
        self.seen: set[int] = set()

    def put(self, text: str) -> None:
        self.digest.update(text.encode())
        self.digest.update(b"\0")

    # -- values --------------------------------------------------------------------------------

    def value(self, value: Any, depth: int = 0) -> None:
        """A configuration value of any type."""
        if depth > MAX_DEPTH:
            self.put(f"deep:{type(value).__qualname__}")
        elif isinstance(value, (*_PLAIN, torch.dtype, torch.device)):
            self.put(repr(value))
        elif isinstance(value, enum.Enum):
            self.put(f"enum:{type(value).__qualname__}.{value.name}")
        elif isinstance(value, torch.Tensor):
            tensor_fingerprint(value, self.digest, label="tensor")
        elif isinstance(value, (np.ndarray, np.generic)):
            array = np.ascontiguousarray(value)
            self.put(f"ndarray:{array.dtype}:{array.shape}")
            self.digest.update(array.tobytes())
        elif isinstance(value, (tuple, list, torch.Size)):
            self.put(f"{type(value).__name__}[{len(value)}]")
            for item in value:
                self.value(item, depth + 1)
        elif isinstance(value, (set, frozenset)):
            self.put(f"set[{len(value)}]")
            for item in sorted(value, key=repr):
                self.value(item, depth + 1)
        elif isinstance(value, Mapping):
            self.put(f"dict[{len(value)}]")
            for key in sorted(value, key=repr):
                self.put(repr(key))
                self.value(value[key], depth + 1)
        elif isinstance(value, functools.partial):
            self.put("partial")
            for part in (value.func, value.args, value.keywords):
                self.value(part, depth + 1)
        elif isinstance(value, types.FunctionType):
            self.function(value)
        elif isinstance(value, types.MethodType):
            self.value(value.__func__, depth + 1)
            owner = value.__self__
            if isinstance(owner, torch.nn.Module):  # its state is the tree's (or walked there)
                self.put(f"bound to:{type(owner).__qualname__}")
            else:  # a method of a config object reads its fields
                self.value(owner, depth + 1)
        elif isinstance(value, type):
            self.cls(value)
        elif isinstance(value, types.ModuleType):
            self.module(value)
        elif _is_builtin(value):
            name = getattr(value, "__qualname__", None) or getattr(value, "__name__", None)
            module = getattr(value, "__module__", None) or ""
            # repr of an OpOverload is stable ("aten.add.Tensor"); a builtin's holds an address
            self.put(f"builtin:{module}.{name}" if name else repr(value))
        else:
            self.instance(value, depth)

    def instance(self, value: Any, depth: int) -> None:
        """A config object: its class, then its fields (dataclasses, __dict__, __slots__)."""
        if id(value) in self.seen:
            self.put(f"again:{type(value).__qualname__}")
            return
        self.seen.add(id(value))
        self.cls(type(value))
        if dataclasses.is_dataclass(value):
            fields = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
        elif hasattr(value, "__dict__"):
            fields = dict(vars(value))
        else:
            slots = [s for c in type(value).__mro__ for s in getattr(c, "__slots__", ())]
            fields = {s: getattr(value, s) for s in slots if hasattr(value, s)}
            if not fields:
                text = repr(value)
                self.put("opaque" if " at 0x" in text else text)
                return
        library = type(value).__module__.partition(".")[0]
        for name in sorted(fields):
            if (library, name) in SEEDED_FIELDS:
                continue
            self.put(name)
            self.value(fields[name], depth + 1)

    # -- code ----------------------------------------------------------------------------------

    def code(self, code: types.CodeType) -> None:
        self.digest.update(code.co_code)
        self.put(repr(code.co_names))
        for const in code.co_consts:
            if isinstance(const, types.CodeType):
                self.code(const)
            else:
                self.put(repr(const))

    def function(self, function: types.FunctionType) -> None:
        """Its code (a library's by name and version), and always what this function object
        carries of its own: defaults and closure cells. ExecuTorch's upsample tests build one
        lambda per row closing over its size, in two files that both call it
        Interpolate.__init__.<locals>.<lambda> (nearest, bilinear): named by qualname alone,
        rows shared a key and were served each other's .pte (the output of another size or
        mode), so a library's code is named by module and qualname."""
        if id(function) in self.seen:
            self.put(f"again:{function.__qualname__}")
            return
        self.seen.add(id(function))
        library = library_of(function.__module__ or "")
        named = library is not None and lives_at_its_name(function)
        if library is not None:
            self.put(f"lib:{library}:{function.__module__}:{function.__qualname__}")
        if not named:  # project code, or library code a factory made: its code itself
            self.put(_function_code_digest(function.__code__))
        for default in function.__defaults__ or ():
            self.value(default)
        for name, default in sorted((function.__kwdefaults__ or {}).items()):
            self.put(name)
            self.value(default)
        for cell in function.__closure__ or ():
            with contextlib.suppress(ValueError):  # an empty cell has no contents
                self.value(cell.cell_contents)
        if not named:
            self.globals_of(function.__code__, function.__globals__, library=library is not None)

    def globals_of(
        self, code: types.CodeType, namespace: Mapping[str, Any], *, library: bool = False
    ) -> None:
        """What a function reads from its module: helpers, classes, modules and constants, and
        the plain attributes it may read off a module it names (`config.SCALE`). Library code
        reads its own module's registries and caches too: those count by their type only
        (walking them would hash state that follows the process, not the model)."""
        names = _global_names(code)
        for name in sorted(names):
            if name not in namespace:
                continue
            value = namespace[name]
            self.put(f"global:{name}")
            if library and not isinstance(value, _CODE_OR_PLAIN):
                self.put(f"state:{type(value).__qualname__}")
                continue
            self.value(value)
            if isinstance(value, types.ModuleType):
                self.plain_attributes(value, names)

    def plain_attributes(self, owner: Any, names: Iterable[str]) -> None:
        """The plain values among `owner`'s attributes called `names` (set at run time or not)."""
        for name in sorted(names):
            with contextlib.suppress(Exception):  # a lazy module attribute may fail to import
                value = inspect.getattr_static(owner, name)
                if _is_plain_setting(value):
                    self.put(f"attr:{name}")
                    self.value(value)

    def cls(self, cls: type) -> None:
        if id(cls) in self.seen:
            self.put(f"again:{cls.__qualname__}")
            return
        self.seen.add(id(cls))
        library = library_of(cls.__module__)
        if library is not None:  # by where it lives: two test files both define Interpolate
            self.put(f"lib:{library}:{cls.__module__}:{cls.__qualname__}")
            if lives_at_its_name(cls):
                self.library_class(cls)
                return
        self.put(f"class:{cls.__module__}.{cls.__qualname__}")
        self.put(class_source_digest(cls))
        for base in cls.__mro__[1:]:
            self.cls(base)
        for name, member in sorted(vars(cls).items()):
            function = (
                member.__func__ if isinstance(member, (staticmethod, classmethod)) else member
            )
            functions = (
                [f for f in (function.fget, function.fset) if f]
                if isinstance(function, property)
                else [function]
            )
            for f in functions:
                if isinstance(f, types.FunctionType):
                    self.put(f"method:{name}")
                    self.function(f)

    def library_class(self, cls: type) -> None:
        """What a run can change about a library class its version names: plain class
        attributes (a flag set on the class) and methods set on it after import, up its bases
        to nn.Module's (whose own are nn.Module's machinery, the same for every model)."""
        for owner in cls.__mro__:
            if owner in (torch.nn.Module, object):
                break
            for name, member in sorted(vars(owner).items()):
                if _is_plain_setting(member):
                    self.put(f"class attr:{owner.__qualname__}.{name}")
                    self.value(member)
                elif isinstance(member, types.FunctionType) and not lives_at_its_name(member):
                    self.put(f"set method:{owner.__qualname__}.{name}")
                    self.function(member)

    def module(self, module: types.ModuleType) -> None:
        library = library_of(module.__name__)
        if library is not None:
            self.put(f"lib:{library}")
            return
        if id(module) in self.seen:
            return
        self.seen.add(id(module))
        try:
            self.put(f"module:{module.__name__}:{module_source_digest(module.__name__)}")
        except (OSError, TypeError, SyntaxError, KeyError):
            self.put(f"module:{module.__name__}")


@functools.lru_cache(maxsize=4096)
def _function_code_digest(code: types.CodeType) -> str:
    """A project function's code as code: a `def`'s source, as a syntax tree without
    docstrings (a docstring lives in the code object's constants on Python 3.11, so hashing
    the bytecode would make a docstring edit a new model). A lambda (which has no docstring,
    and whose source line may hold others) or code with no source kept: its bytecode."""
    if code.co_name != "<lambda>":
        try:
            return "src:" + source_digest(inspect.getsource(code))
        except (OSError, TypeError, SyntaxError, IndentationError):
            pass
    digest = hashlib.sha256()
    walk = _Walk(digest)
    walk.code(code)
    return "code:" + digest.hexdigest()


def lives_at_its_name(obj: Any) -> bool:
    """Whether `obj`'s module and qualname lead back to `obj` itself: only then does a
    library's version stand for its code. Not so for what a factory made (`<locals>`), what
    `type()` made under a name another object holds, or a function replaced after import."""
    qualname = getattr(obj, "__qualname__", "")
    found: Any = sys.modules.get(getattr(obj, "__module__", None) or "")
    if found is None or "<" in qualname:
        return False
    for part in qualname.split("."):
        try:
            found = inspect.getattr_static(found, part)
        except AttributeError:
            return False
    return (getattr(found, "__func__", found) is obj) or found is obj


_SETTING_TYPES = (int, float, complex, str, bytes, bool, type(None), enum.Enum)
_CODE_OR_PLAIN = (
    *_SETTING_TYPES,
    types.FunctionType,
    types.BuiltinFunctionType,
    type,
    types.ModuleType,
    functools.partial,
    torch.dtype,
    torch.device,
)


def _is_plain_setting(value: Any) -> bool:
    """A number, string, flag or enum, or a tuple of them: settings, never state."""
    if isinstance(value, tuple):
        return all(_is_plain_setting(v) for v in value)
    return isinstance(value, _SETTING_TYPES)


def _is_builtin(value: Any) -> bool:
    return isinstance(value, (types.BuiltinFunctionType, types.MethodWrapperType)) or (
        callable(value) and type(value).__module__.startswith("torch._ops")
    )


def _global_names(code: types.CodeType) -> set[str]:
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _global_names(const)
    return names


def model_fingerprint(module: torch.nn.Module) -> str:
    """sha256 over the module tree's code, configuration and tensor bytes."""
    digest = hashlib.sha256()
    walk = _Walk(digest)
    internals = _module_internals()
    for name, sub in module.named_modules():
        walk.put(f"module {name}")
        walk.cls(type(sub))
        for attr, value in sorted(vars(sub).items()):
            if attr in internals:
                continue
            walk.put(f"attr:{attr}")
            walk.value(value)
    tensors = dict(module.state_dict(keep_vars=False))
    for name, buffer in module.named_buffers():
        tensors.setdefault(name, buffer)
    for name in sorted(tensors):
        tensor_fingerprint(tensors[name], digest, label=name)
    return digest.hexdigest()


def tensor_fingerprint(tensor: torch.Tensor, digest: Any | None = None, label: str = "") -> str:
    """sha256 of a tensor's dtype, shape and bytes (optionally folded into another digest)."""
    own = digest if digest is not None else hashlib.sha256()
    data = tensor.detach().contiguous().cpu()
    own.update(f"{label}:{data.dtype}:{tuple(data.shape)}".encode())
    if data.numel():
        own.update(data.reshape(-1).view(torch.uint8).numpy().tobytes())
    return str(own.hexdigest())


def tensors_fingerprint(tensors: Iterable[torch.Tensor]) -> str:
    digest = hashlib.sha256()
    for i, tensor in enumerate(tensors):
        tensor_fingerprint(tensor, digest, label=str(i))
    return digest.hexdigest()


def input_spec(inputs: Iterable[torch.Tensor]) -> list[str]:
    """Shapes, dtypes and dim orders: what the exported program's signature depends on. The
    dim order counts: a channels-last input lowers to another program than the same values
    contiguous (the values' fingerprint reads them contiguous)."""
    return [f"{tuple(t.shape)}:{t.dtype}:{tuple(t.dim_order())}" for t in inputs]
