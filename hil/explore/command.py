"""`hil explore CASE --target T [--recipe R]`: a case's .pte in Model Explorer, with hil's overlays.

    hil explore mobilenet_v2_lrn --target u85-ref            # export if needed, open the browser
    hil explore mobilenet_v2_lrn --target u85-ref --no-browser --port 8090
    hil explore path/to/model.pte                             # any .pte (no case needed)

`prepare` does the work up to the files the viewer reads (graph JSON and overlays, under
.hil/explore/<label>/); `run` starts the server, prints the URL and serves until Ctrl-C.
"""

from __future__ import annotations

import argparse
import json
import logging
import signal
import sys
import time
import webbrowser
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from hil import environment
from hil.artifacts.pte_program import read_program
from hil.device_search import find_devices
from hil.errors import ExploreError, PortInUse, UsageError
from hil.explore import node_errors, server
from hil.explore.delegates import (
    ETHOS_U_BACKEND,
    VGF_BACKEND,
    KeptDelegate,
    adapter_paths,
    kept_delegates,
    kept_vgf_delegates,
)
from hil.explore.overlays import (
    FIRST_DIVERGENT,
    Overlay,
    Shown,
    cycles_overlay,
    error_overlays,
    missing_nodes,
    partition_overlay,
)
from hil.explore.viewer import Viewer, default_venv
from hil.paths import default_cache_dir, default_results_dir

if TYPE_CHECKING:  # the source imports torch: `hil --help` and `hil report` do without it
    from hil.explore.source import Source

USAGE = """Open a case's .pte in Model Explorer (served on 127.0.0.1 only) with hil's overlays:
its Ethos-U delegates expanded to their TOSA graphs, the partition report, Vela's per-layer
NPU cycles and, when there is one, a per-node error file. Examples:

    hil explore mobilenet_v2_lrn --target u85-ref            # export if needed, open the browser
    hil explore mobilenet_v2_lrn --target u85-ref --no-browser --port 8090
    hil explore mobilenet_v2_lrn --target u85-ref --show delegate_1
    hil explore path/to/model.pte                             # any .pte (no case needed)
"""

log = logging.getLogger("hil.explore")
Progress = Callable[[str], None]


def default_work_dir() -> Path:
    return environment.EXPLORE_DIR.path()


@dataclass(frozen=True)
class Exploration:
    """The files the viewer reads for one model, and what to say about them."""

    source: Source
    folder: Path
    graphs: Path  # the converted graph collection (JSON), labelled source.label
    overlays: tuple[Path, ...]
    shown: Shown
    notes: tuple[str, ...]

    def view(self, graph: str = "") -> server.View:
        """The page on `graph` ("" the first), zoomed to its focus node if it has one."""
        label = self.source.label
        return server.View(
            models=[(self.graphs, label)],
            overlays=[(p, label) for p in self.overlays],
            graph=graph,
            collection=label if graph else "",
            node=self.focus().get(graph, ""),
        )

    def focus(self) -> dict[str, str]:
        """Graph id -> the node worth looking at first: the first divergent operator where the
        error file names one, else each delegate's costliest operator by Vela's estimate."""
        found = {}
        for d in self.shown.delegates:
            if d.estimate is not None and d.estimate.layers:
                top = max(d.estimate.layers.values(), key=lambda layer: layer.npu_cycles)
                found[self.shown.delegate_graph(d)] = d.graph.node_id(top.op_index)
        first = self.first_divergent()
        if first is not None:
            found[first[0]] = first[1]
        return found

    def first_divergent(self) -> tuple[str, str] | None:
        """(graph id, node id) of the first divergent operator, when the error file names it."""
        for path in self.overlays:
            if path.stem == FIRST_DIVERGENT:
                data = json.loads(path.read_text())
                own = [g for g in data if g not in self.shown.program.plans] or list(data)
                return own[0], next(iter(data[own[0]]["results"]))
        return None

    def start_graph(self, show: str | None) -> str:
        """`--show DELEGATE`'s graph; else the first divergent operator's; else the .pte's."""
        if show:
            return self.delegate_graph(show)
        first = self.first_divergent()
        if first is not None:
            return first[0]
        plans = self.shown.program.plans
        return plans[0] if plans else ""

    def delegate_graph(self, name: str) -> str:
        """The viewer's graph id of a delegate, by its folder name ("delegate_1")."""
        return self.shown.delegate_graph(self.shown.delegate(name, "--show"))


def prepare(
    source: Source,
    viewer: Viewer,
    work: Path,
    progress: Progress,
    errors: Path | None = None,
    default_errors: Path | None = None,
) -> Exploration:
    """Convert the .pte (delegates expanded in program order) and write hil's overlays."""
    folder = work / source.label
    (folder / "overlays").mkdir(parents=True, exist_ok=True)
    for old in (folder / "overlays").glob("*.json"):
        old.unlink()
    program = read_program(source.pte)
    notes: list[str] = []
    calls = program.calls_to(ETHOS_U_BACKEND)
    delegates: tuple[KeptDelegate, ...] = ()
    if calls and source.details.get("delegates") and source.folder is not None:
        progress(
            f"matching {len(calls)} Ethos-U delegate(s) to their TOSA graphs "
            "(Vela again, per-layer estimate)"
        )
        delegates = kept_delegates(program, source.folder, source.details, folder / "vela")
        guessed = [d.name for d in delegates if d.paired_by != "command stream"]
        if guessed:
            notes.append(
                f"{', '.join(guessed)} paired with their calls by {delegates[0].paired_by}, "
                "not by command stream (Vela's output differs from the .pte's)"
            )
    elif calls:
        notes.append(
            f"{len(calls)} Ethos-U delegate(s) but no TOSA graphs kept beside this "
            ".pte (not a hil ethos-u artifact): the delegates are shown unexpanded"
        )
    elif program.calls_to(VGF_BACKEND):
        vgf = program.calls_to(VGF_BACKEND)
        if source.folder is not None and source.details.get("delegates"):
            delegates = kept_vgf_delegates(program, source.folder, source.details)
        notes.append(
            f"{len(vgf)} VGF delegate(s), expanded from the .pte's own VGF payload by the "
            "viewer's VGF adapter"
            + (
                f"; the TOSA graphs they were converted from are kept in "
                f"{source.folder / 'delegates'}/*/out.tosa"
                if delegates and source.folder
                else ""
            )
        )
    elif program.delegate_calls and source.details.get("tosa_spec") and source.folder:
        notes.append(
            "delegates of " + ", ".join(sorted(program.backends())) + ": shown unexpanded "
            "(the viewer's PTE adapter expands Ethos-U, VGF and XNNPACK delegates only); "
            f"their TOSA graphs are kept in {source.folder / 'delegates'}/*/out.tosa"
        )
    elif program.delegate_calls:
        notes.append(
            "delegates of " + ", ".join(sorted(program.backends())) + ": no TOSA "
            "graphs (the adapter expands the backends it knows, e.g. XNNPACK)"
        )
    else:
        notes.append("no delegates: every operator runs on the CPU")
    model = folder / f"{source.label}.pte"  # every cache entry is model.pte: a name of its own
    model.unlink(missing_ok=True)
    model.symlink_to(source.pte)
    graphs = folder / f"{source.label}.json"
    progress(f"converting {source.pte} for the viewer")
    viewer.convert(model, adapter_paths(delegates), source.label, graphs)
    shown = Shown(program, tuple(delegates), model.name)
    converted = graph_nodes(graphs)
    overlays = _overlays(shown, source, errors, default_errors, notes, converted)
    unknown = missing_nodes(overlays, converted)
    if unknown:
        log.warning(
            "%d overlay node(s) are not in the converted graph (first: %s)",
            len(unknown),
            unknown[0],
        )
        notes.append(
            f"{len(unknown)} overlay value(s) name nodes the converted graph lacks "
            f"(first: {unknown[0]}): the adapter's node ids may have changed"
        )
    paths = tuple(o.write(folder / "overlays") for o in overlays)
    return Exploration(source, folder, graphs, paths, shown, tuple(notes))


def _overlays(
    shown: Shown,
    source: Source,
    errors: Path | None,
    default_errors: Path | None,
    notes: list[str],
    converted: dict[str, set[str]],
) -> list[Overlay]:
    overlays = []  # the viewer colours by the last one: partition, or the errors when given
    cycles = cycles_overlay(shown)
    if cycles is not None:
        overlays.append(cycles)
    elif any(d.call.backend == ETHOS_U_BACKEND for d in shown.delegates):
        notes.append("no Vela per-layer estimate: the artifact records no Vela flags")
    partition = source.details.get("partition")
    if partition:
        overlays.append(partition_overlay(shown, partition, converted))
    if errors is not None:
        overlays += error_overlays(shown, node_errors.read_node_errors(errors), source.sha256)
    elif default_errors is not None and default_errors.is_file():
        try:
            found = node_errors.read_node_errors(default_errors)
            overlays += error_overlays(shown, found, source.sha256)
            notes.append(f"per-node errors from {default_errors}")
        except ExploreError as e:
            notes.append(f"per-node errors in {default_errors} not shown: {e.message}")
    return overlays


def graph_nodes(path: Path) -> dict[str, set[str]]:
    """Graph id -> node ids of a converted graph collection."""
    data = json.loads(path.read_text())
    return {g["id"]: {n["id"] for n in g["nodes"]} for g in data["graphs"]}


# -- the command ---------------------------------------------------------------------------


def add_parser(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    explore = commands.add_parser(
        "explore",
        help="open a case's .pte in Model Explorer, with hil's overlays",
        description=USAGE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    explore.add_argument("case", help="suite case name, MODULE:ATTR naming a hil.Case, or a .pte")
    explore.add_argument("--target", help="device name (needed for a case), e.g. u85-ref")
    explore.add_argument("--recipe", help="recipe of the target (default: its first)")
    explore.add_argument(
        "--no-export", action="store_true", help="refuse to export a case that has no artifact yet"
    )
    explore.add_argument(
        "--errors",
        type=Path,
        metavar="FILE",
        help="per-node error file (format hil-node-errors/1, see docs/explain.md)",
    )
    explore.add_argument(
        "--port", type=int, help="port on 127.0.0.1 (default: 8080 or the next free one)"
    )
    explore.add_argument("--no-browser", action="store_true", help="only print the URL")
    explore.add_argument(
        "--show",
        metavar="DELEGATE",
        help="open on this delegate's TOSA graph (its folder name, e.g. delegate_1) instead of "
        "the .pte graph",
    )
    explore.add_argument(
        "--no-install",
        action="store_true",
        help="fail instead of installing the viewer on first use",
    )
    explore.add_argument(
        "--viewer-venv",
        type=Path,
        help="the viewer's tool venv (default $HIL_EXPLORER_VENV or .venv-explorer)",
    )
    explore.add_argument(
        "--hil-cache-dir",
        "--cache-dir",
        dest="cache_dir",
        type=Path,
        help="artifact cache (default $HIL_CACHE_DIR or .hil/cache)",
    )
    explore.add_argument(
        "--results-dir",
        type=Path,
        help="where node-errors/ is looked for (default $HIL_RESULTS_DIR or .hil/results)",
    )
    explore.add_argument(
        "--suites",
        type=Path,
        default=Path.cwd(),
        help="folder holding the suites/ package (default: here)",
    )
    explore.set_defaults(run=run)


def say(message: str) -> None:
    print(f"hil explore: {message}", file=sys.stderr, flush=True)


def resolve(args: argparse.Namespace, ready: Callable[[], object]) -> Source:
    """What to show; `ready` runs after the input is checked and before any export."""
    from hil.explore.source import from_case, from_path

    path = Path(args.case)
    if args.case.endswith(".pte") or (path.is_file() and not args.target):
        source = from_path(path)
        ready()
        return source
    if not args.target:
        raise UsageError(
            f"{args.case!r} is a case: say on which target to show it",
            fix=f"hil explore {args.case} --target u85-ref",
        )
    cache = args.cache_dir or default_cache_dir()
    return from_case(
        args.case,
        args.target,
        args.recipe,
        registry=find_devices(given=args.devices or (), say=say).registry,
        cache_dir=cache,
        suites_root=args.suites,
        allow_export=not args.no_export,
        progress=say,
        ready=ready,
    )


def run(args: argparse.Namespace) -> int:
    viewer = Viewer(args.viewer_venv or default_venv())
    source = resolve(args, lambda: viewer.ensure(say, allow_install=not args.no_install))
    results = args.results_dir or default_results_dir()
    exploration = prepare(
        source,
        viewer,
        default_work_dir(),
        say,
        args.errors,
        node_errors.default_path(results, source.label),
    )
    for note in exploration.notes:
        say(note)
    graph = exploration.start_graph(args.show)
    port = args.port if args.port is not None else server.free_port()
    if port is None:
        raise PortInUse(
            f"ports {server.DEFAULT_PORT}-{server.DEFAULT_PORT + 19} on {server.HOST} are all "
            "in use",
            fix="pass a free --port",
        )
    with server.start(viewer, port, exploration.folder / "viewer.log", say) as running:
        url = running.url(exploration.view(graph))
        say(
            f"Model Explorer serves {source.label} on {running.base_url} (127.0.0.1 only); "
            "Ctrl-C stops it"
        )
        print(url, flush=True)
        if not args.no_browser:
            webbrowser.open(url)
        return _serve(running)


def _serve(running: server.Server) -> int:
    """Until Ctrl-C (or SIGTERM, SIGHUP); the server is stopped by the caller's `with`."""

    def stop(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, stop)
    try:
        while running.process.poll() is None:
            time.sleep(0.5)
    except KeyboardInterrupt:
        say("stopping Model Explorer")
        return 0
    say(f"Model Explorer exited with status {running.process.returncode} (log: {running.log_path})")
    return 1
