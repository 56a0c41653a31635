"""The process that holds the Vulkan device: `python -m hil.vgf.worker`.

Started by hil.vgf.client with the layer stack's environment (the loader reads it when the
instance is created, so it must be this process's own). It builds each scenario once
(`scenario_runner_py.load_scenario`: the pipeline, about a second on lavapipe) and then runs it
as often as asked, uploading the inputs and downloading the outputs in memory (milliseconds).
A crash or a hang here costs this process, never the test session.

Frames on stdin and stdout: a 4-byte little-endian length, then a pickled tuple. Requests:

    ("load", key, scenario_json, folder, input_uids, output_uids)  ->  ("ok", None)
    ("run", key, [input arrays])          ->  ("ok", [output arrays])
    ("drop", key)                         ->  ("ok", None)
    ("held",)                             ->  ("ok", the number of scenarios built and held)
    ("probe", folder)                     ->  ("ok", None): an empty scenario, which creates
                                              the instance and device with every layer

and any failure answers ("error", "<type>: <message>"). What the scenario runner's own library
prints goes to stderr (the client's log file), never into the frames.
"""

from __future__ import annotations

import os
import pickle
import struct
import sys
from typing import IO, Any

HEADER = struct.Struct("<I")


def read_frame(stream: IO[bytes]) -> Any:
    head = stream.read(HEADER.size)
    if len(head) < HEADER.size:
        return None
    (size,) = HEADER.unpack(head)
    body = stream.read(size)
    if len(body) < size:
        return None
    return pickle.loads(body)  # frames from hil's own client, over a pipe


def write_frame(stream: IO[bytes], value: Any) -> None:
    body = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(HEADER.pack(len(body)) + body)
    stream.flush()


class Scenarios:
    """The built scenarios, by key, and the answers to requests about them."""

    def __init__(self) -> None:
        import scenario_runner_py

        self.runner = scenario_runner_py
        self.built: dict[str, tuple[Any, list[Any], list[Any]]] = {}

    def load(
        self, key: str, scenario: str, folder: str, inputs: list[str], outputs: list[str]
    ) -> None:
        built = self.runner.load_scenario(scenario, work_dir=folder, output_dir=folder)
        self.built[key] = (
            built,
            [built.get_tensor_id(u) for u in inputs],
            [built.get_tensor_id(u) for u in outputs],
        )

    def run(self, key: str, arrays: list[Any]) -> list[Any]:
        import numpy as np

        built, inputs, outputs = self.built[key]
        for tensor, array in zip(inputs, arrays, strict=True):
            built.upload(tensor, np.ascontiguousarray(array))
        built.run()
        return [np.array(built.download(tensor), copy=True) for tensor in outputs]

    def drop(self, key: str) -> None:
        self.built.pop(key, None)

    def held(self) -> int:
        return len(self.built)

    def probe(self, folder: str) -> None:
        from pathlib import Path

        empty = Path(folder) / "probe.json"
        empty.write_text('{"commands": [], "resources": []}')
        self.runner.load_scenario(str(empty), work_dir=folder, output_dir=folder)


def serve(requests: IO[bytes], answers: IO[bytes]) -> None:
    scenarios = Scenarios()
    while (request := read_frame(requests)) is not None:
        verb, *args = request
        try:
            result = getattr(scenarios, verb)(*args)
        except Exception as e:  # the runner's refusal, sent back with its own words
            write_frame(answers, ("error", f"{type(e).__name__}: {e}"))
        else:
            write_frame(answers, ("ok", result))


def main() -> None:
    answers = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # the library's prints go to the log
    serve(sys.stdin.buffer, answers)


if __name__ == "__main__":
    main()
