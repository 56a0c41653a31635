"""Content fingerprints: what makes two exports the same export.

A model's fingerprint covers its code (the source of every module class it is made of and any
function it holds), its configuration (every plain attribute such as stride or dim) and its
weights and buffers (their bytes). Two modules with equal fingerprints lower to the same .pte.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.metadata
import inspect
import json
import types
from collections.abc import Iterable, Mapping
from typing import Any

import torch

_PLAIN = (int, float, str, bool, type(None))


def _hash_code(code: types.CodeType, digest: Any) -> None:
    digest.update(code.co_code)
    digest.update(repr(code.co_names).encode())
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            _hash_code(const, digest)
        else:
            digest.update(repr(const).encode())


def _class_source_hash(cls: type) -> str:
    try:
        text = inspect.getsource(cls)
    except (OSError, TypeError):
        text = f"{cls.__module__}.{cls.__qualname__}"
    return hashlib.sha256(text.encode()).hexdigest()


def _attribute_token(value: Any, digest: Any) -> bool:
    """Feed a configuration attribute into the digest; False when the value is not one.

    Configuration is what changes the exported program without living in a tensor: numbers,
    strings, dtypes, containers of them, and the functions a module holds (their code, the
    constants and globals they read, their closures; a builtin such as torch.add by name).
    """
    if isinstance(value, (*_PLAIN, torch.dtype, torch.device)):
        digest.update(repr(value).encode())
        return True
    if isinstance(value, (tuple, list)):
        digest.update(f"{type(value).__name__}[{len(value)}]".encode())
        for item in value:
            _token_or_type(item, digest)
        return True
    if isinstance(value, dict):
        digest.update(f"dict[{len(value)}]".encode())
        for key in sorted(value, key=repr):
            digest.update(repr(key).encode())
            _token_or_type(value[key], digest)
        return True
    if isinstance(value, functools.partial):
        digest.update(b"partial")
        return all(_attribute_token(v, digest) for v in (value.func, value.args, value.keywords))
    if isinstance(value, types.FunctionType):
        _hash_function(value, digest)
        return True
    if isinstance(value, (types.BuiltinFunctionType, types.MethodWrapperType)) or (
        callable(value) and type(value).__module__.startswith("torch._ops")
    ):
        name = getattr(value, "__qualname__", None) or getattr(value, "__name__", None)
        module = getattr(value, "__module__", None) or ""
        # repr of an OpOverload is stable ("aten.add.Tensor"); a builtin's repr holds an address
        digest.update((f"{module}.{name}" if name else repr(value)).encode())
        return True
    return False


def _token_or_type(value: Any, digest: Any) -> None:
    """Inside a container, a value that is not configuration still counts by its type."""
    if not _attribute_token(value, digest):
        digest.update(type(value).__qualname__.encode())


def _hash_function(function: types.FunctionType, digest: Any) -> None:
    _hash_code(function.__code__, digest)
    for default in function.__defaults__ or ():
        _attribute_token(default, digest)
    for cell in function.__closure__ or ():
        with contextlib.suppress(ValueError):  # an empty cell has no contents
            _attribute_token(cell.cell_contents, digest)
    for name in _global_names(function.__code__):  # module constants it reads, e.g. SCALE = 2
        if name in function.__globals__:
            value = function.__globals__[name]
            if isinstance(value, (*_PLAIN, tuple, list, dict)):
                digest.update(name.encode())
                _attribute_token(value, digest)


def _global_names(code: types.CodeType) -> set[str]:
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _global_names(const)
    return names


def model_fingerprint(module: torch.nn.Module) -> str:
    """sha256 over the module tree's code, configuration and tensor bytes."""
    digest = hashlib.sha256()
    sources: dict[type, str] = {}
    for name, sub in module.named_modules():
        digest.update(f"module {name} {type(sub).__module__}.{type(sub).__qualname__}".encode())
        if type(sub) not in sources:  # each class once: finding a class's source parses its file
            sources[type(sub)] = _class_source_hash(type(sub))
        digest.update(sources[type(sub)].encode())
        for attr, value in sorted(vars(sub).items()):
            if attr.startswith("_") or attr == "training":
                continue
            digest.update(attr.encode())
            _attribute_token(value, digest)
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
    """Shapes and dtypes only: what the exported program's signature depends on."""
    return [f"{tuple(t.shape)}:{t.dtype}" for t in inputs]


@functools.lru_cache(maxsize=1)
def tool_versions() -> Mapping[str, str]:
    """Versions of the tools that shape an export; part of every cache key and every report."""
    versions: dict[str, str] = {"torch": str(torch.__version__)}
    for dist in ("executorch", "ethos-u-vela", "tosa-tools", "torchao"):
        try:
            versions[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            versions[dist] = "absent"
    return types.MappingProxyType(versions)


def digest_of(material: Mapping[str, Any]) -> str:
    """sha256 of a JSON-able mapping in canonical form."""
    text = json.dumps(material, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()
