"""`hil check MODULE:FACTORY`: one user model through the whole data path from the command
line, for the engineer validating a new operator without writing a test. It prints the table
the pytest plugin prints and exits 0 only when every check PASSed."""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import inspect
import sys
from pathlib import Path
from typing import Any

from hil.errors import HilError, ResultsBusy, UsageError

DTYPES = ("float32", "float16", "bfloat16")


def add_parser(commands: Any) -> None:
    check = commands.add_parser(
        "check",
        help="export, run and judge one model on targets (no test file needed)",
        description="Build the model from MODULE:FACTORY (a module name or a .py file, and a "
        "callable returning a torch.nn.Module, or a module instance), feed it seeded inputs "
        "of the given shapes, and check it on each target with each recipe.",
    )
    check.add_argument(
        "model",
        metavar="MODULE:FACTORY",
        help="e.g. my_ops.blocks:make_block or path/to/model.py:Net",
    )
    check.add_argument(
        "--input-shape",
        action="append",
        required=True,
        metavar="DIMS",
        help="one input's shape, e.g. 1x3x224x224 (repeat for more inputs)",
    )
    check.add_argument(
        "--dtype", choices=DTYPES, default="float32", help="the inputs' dtype (default float32)"
    )
    check.add_argument(
        "--target",
        action="append",
        metavar="NAME",
        help="target to run on (repeatable; default host)",
    )
    check.add_argument(
        "--recipe",
        action="append",
        metavar="NAME",
        help="only this recipe (repeatable; default every recipe of the target)",
    )
    check.add_argument("--name", help="the case's name in results (default: the factory's)")
    check.add_argument("--seed", type=int, default=0, help="seed of the inputs (default 0)")
    check.add_argument(
        "--cache-dir", type=Path, help="artifact cache (default: $HIL_CACHE_DIR or .hil/cache)"
    )
    check.add_argument(
        "--results-dir",
        type=Path,
        help="arrays and records (default: $HIL_RESULTS_DIR or .hil/results); refused while "
        "another run holds it, an earlier run there moved into earlier/RUN_ID/",
    )
    check.set_defaults(run=run)


def parse_shape(text: str) -> tuple[int, ...]:
    """'1x3x224x224' -> (1, 3, 224, 224); every dimension a whole number >= 1."""
    parts = text.lower().split("x")
    if not all(p.isdigit() and int(p) >= 1 for p in parts):
        raise UsageError(
            f"--input-shape {text!r} is not a shape",
            fix="give dimensions >= 1 joined by x, e.g. 1x3x224x224",
        )
    return tuple(int(p) for p in parts)


def load_factory(reference: str) -> Any:
    """The object MODULE:FACTORY names; MODULE is a dotted name (found from the current
    folder too) or a path to a .py file."""
    module_name, colon, attribute = reference.rpartition(":")
    if not colon or not module_name or not attribute:
        raise UsageError(
            f"{reference!r} is not MODULE:FACTORY",
            fix="name the module and the callable, e.g. my_ops.blocks:make_block",
        )
    module = _load_module(module_name)
    try:
        return getattr(module, attribute)
    except AttributeError:
        found = _factories(module)
        choices = ", ".join(found) or "(it defines no model)"
        raise UsageError(
            f"{module_name} has no {attribute!r}", fix=f"pick one of: {choices}"
        ) from None


def _factories(module: Any) -> list[str]:
    """What in `module` could be FACTORY: its own functions and nn.Module classes, and the
    module instances it holds."""
    import torch

    def fits(value: Any) -> bool:
        if isinstance(value, torch.nn.Module):
            return True
        own = getattr(value, "__module__", None) == module.__name__
        model_class = inspect.isclass(value) and issubclass(value, torch.nn.Module)
        return own and (inspect.isfunction(value) or model_class)

    return sorted(n for n, v in vars(module).items() if not n.startswith("_") and fits(v))


def _load_module(name: str) -> Any:
    if name.endswith(".py") or "/" in name:
        path = Path(name).resolve()
        spec = importlib.util.spec_from_file_location(path.stem, path)
        if not path.is_file() or spec is None or spec.loader is None:
            raise UsageError(f"{name} is not a Python file", fix="give the model file's path")
        module = importlib.util.module_from_spec(spec)
        sys.modules[path.stem] = module
        loader = spec.loader
        _execute(lambda: loader.exec_module(module), name)
        return module
    sys.path.insert(0, str(Path.cwd()))  # like `python -m`: the current folder's modules
    return _execute(lambda: importlib.import_module(name), name)


def _execute(load: Any, name: str) -> Any:
    try:
        return load()
    except ModuleNotFoundError as e:
        raise UsageError(
            f"cannot import {name}: {e}",
            fix="run from the folder that holds it, or give its .py file",
        ) from e
    except Exception as e:  # the user's module failed while importing: their words, typed
        raise UsageError(
            f"importing {name} failed: {type(e).__name__}: {e}",
            fix="fix the module so that `python -c 'import ...'` works",
        ) from e


def build_module(factory: Any, reference: str) -> Any:
    import torch

    model = factory if isinstance(factory, torch.nn.Module) else None
    if model is None and callable(factory):
        try:
            model = factory()
        except Exception as e:
            raise UsageError(
                f"{reference}() failed: {type(e).__name__}: {e}",
                fix="FACTORY must build the model without arguments",
            ) from e
    if not isinstance(model, torch.nn.Module):
        raise UsageError(
            f"{reference} gave {type(model).__name__}, not a torch.nn.Module",
            fix="FACTORY must be an nn.Module, or a callable returning one",
        )
    return model.eval()


def run(args: argparse.Namespace) -> int:
    import torch

    from hil.compat.versions import require_supported

    print(f"hil: {require_supported().sentence()}", file=sys.stderr)

    from hil.case import case_from_module, seeded
    from hil.device_search import find_devices
    from hil.library import Session
    from hil.report import fvp_table, problems, summary
    from hil.verdict.error_records import error_record

    shapes = [parse_shape(s) for s in args.input_shape]
    model = build_module(load_factory(args.model), args.model)
    inputs = seeded(*shapes, seed=args.seed, dtype=getattr(torch, args.dtype))()
    name = args.name or args.model.rpartition(":")[2]
    case = case_from_module(name, model, inputs)
    registry = find_devices(
        given=args.devices or (), say=lambda line: print(f"hil: {line}", file=sys.stderr)
    ).registry
    targets = args.target or ["host"]
    plan = [(t, r) for t in targets for r in _recipes(registry.get(t).recipe_names, args.recipe, t)]
    records: list[dict[str, Any]] = []
    failures: list[str] = []
    with Session(
        devices=registry,
        cache_dir=args.cache_dir,
        results_dir=args.results_dir,
        progress=lambda line: print(f"hil: {line}", file=sys.stderr),
    ) as session:
        for target, recipe in plan:
            print(f"hil: {name} on {target} with {recipe}", file=sys.stderr)
            try:
                result = session.check(case, target, recipe)
            except ResultsBusy:  # the folder, not this check: nothing else may run either
                raise
            except HilError as e:
                records.append(error_record(name, target, recipe, e))
                failures.append(f"{target} [{recipe}]: {e}")
                continue
            records.append(result.to_record())
            if result.verdict != "PASS":
                failures.append(
                    f"{target} [{recipe}]: {result.verdict}: "
                    f"{result.failure_message() or result.not_judged_message()}"
                )
    for line in summary.render(records) + fvp_table.render(records) + problems.render(records):
        print(line)
    for failure in failures:
        print(failure)
    return 0 if not failures else 1


def _recipes(available: tuple[str, ...], wanted: list[str] | None, target: str) -> list[str]:
    if not wanted:
        return list(available)
    unknown = [r for r in wanted if r not in available]
    if unknown:
        raise UsageError(
            f"target {target} has no recipe {', '.join(unknown)}",
            fix=f"its recipes: {', '.join(available)}",
        )
    return list(wanted)
