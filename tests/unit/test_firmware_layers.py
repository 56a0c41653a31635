"""The runner's protocol/ folder reads top-down: every file is in a layer, includes only headers
of the layers below it (and its own header), and no function calls one of a layer above it, so
a call or include circle fails here instead of in a new board author's head."""

from __future__ import annotations

import re
from pathlib import Path

PROTOCOL = Path(__file__).resolve().parents[2] / "firmware" / "src" / "protocol"

# Bottom first. A new file in protocol/ goes in one of these, or this test fails.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("wire.h", "sha256_constants.h"),
    ("codec.h", "crc32.h", "crc32.c", "sha256.h", "sha256.c", "sha256_armv8.c"),
    ("frame.h", "frame.c", "digest.h", "digest_inline.c"),
    ("state.h",),
    ("reply.h", "reply.c"),
    ("held.h", "held.c"),
    ("handlers.h", "info.c", "load.c", "load_file.c", "run.c", "trace.c"),
    ("commands.h", "commands.c"),
    ("server.h", "server.c"),
)
LAYER = {name: level for level, names in enumerate(LAYERS) for name in names}
# A source's own header, where it is not the one with its stem.
OWN_HEADER = {
    "sha256_armv8.c": "sha256.h",
    "digest_inline.c": "digest.h",
    "info.c": "handlers.h",
    "load.c": "handlers.h",
    "load_file.c": "handlers.h",
    "run.c": "handlers.h",
    "trace.c": "handlers.h",
}
# What protocol/ may include from outside it: the layers under the whole protocol.
BELOW_PROTOCOL = ("../engine/", "../platform/")

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)
# Comments, strings and character literals hide calls and braces from the scan below.
NOISE = re.compile(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.DOTALL)
# A function's head at column 0: `type name(` (static, const, pointers allowed).
HEAD = re.compile(r"^(static\s+)?[A-Za-z_][\w \t*]*?\b(\w+)\s*\(", re.MULTILINE)
CALL = re.compile(r"(?<!->)(?<![.\w])(\w+)\s*\(")


def _sources() -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted(PROTOCOL.iterdir()) if p.suffix in (".c", ".h")}


def _own_header(name: str) -> str:
    return OWN_HEADER.get(name, name.removesuffix(".c") + ".h")


def include_violations(sources: dict[str, str]) -> list[str]:
    """Includes of a protocol header that is not below the including file."""
    found = []
    for name, text in sources.items():
        for header in INCLUDE.findall(text):
            if header.startswith(BELOW_PROTOCOL):
                continue
            if header not in LAYER:
                found.append(f"{name} includes {header}, which is in no layer")
            elif LAYER[header] >= LAYER[name] and header != _own_header(name):
                found.append(f"{name} (layer {LAYER[name]}) includes {header} ({LAYER[header]})")
    return found


def _matching(text: str, at: int, opening: str, closing: str) -> int:
    """Index just past the bracket that closes the one at `at`."""
    depth = 0
    for i in range(at, len(text)):
        depth += (text[i] == opening) - (text[i] == closing)
        if depth == 0:
            return i + 1
    return len(text)


def functions(text: str) -> list[tuple[str, bool, str]]:
    """(name, static, body) of every function defined at column 0 of a C source."""
    text = NOISE.sub(" ", text)
    found = []
    for head in HEAD.finditer(text):
        if head.group(2) in ("if", "for", "while", "switch", "return", "sizeof"):
            continue
        after = _matching(text, head.end() - 1, "(", ")")
        rest = text[after:].lstrip()
        if rest.startswith("{"):
            start = len(text) - len(rest)
            body = text[start : _matching(text, start, "{", "}")]
            found.append((head.group(2), bool(head.group(1)), body))
    return found


def call_violations(sources: dict[str, str]) -> list[str]:
    """Calls from a function to one that another file defines in a higher layer."""
    defined: dict[str, list[str]] = {}  # name -> files whose definition others can call
    for name, text in sources.items():
        for function, static, _ in functions(text):
            if not static or name.endswith(".h"):
                defined.setdefault(function, []).append(name)
    found = []
    for name, text in sources.items():
        local = {function for function, _, _ in functions(text)}
        for function, _, body in functions(text):
            for callee in sorted(set(CALL.findall(body)) - local):
                for owner in defined.get(callee, ()):
                    if LAYER[owner] > LAYER[name]:
                        found.append(f"{function} ({name}) calls {callee} ({owner})")
    return found


def test_every_protocol_file_has_a_layer() -> None:
    """A new file is placed in LAYERS; a removed one leaves it."""
    assert sorted(_sources()) == sorted(LAYER)


def test_includes_point_down() -> None:
    """No file includes a header of its own or a higher layer, except its own header."""
    assert include_violations(_sources()) == []


def test_calls_point_down() -> None:
    """No function calls a function defined in a higher layer."""
    assert call_violations(_sources()) == []


def test_the_checks_see_a_circle() -> None:
    """Both checks notice a lower layer reaching up, and the scan finds the real functions."""
    sources = _sources()
    names = {function for text in sources.values() for function, _, _ in functions(text)}
    assert {"hil_server_run", "hil_dispatch", "hil_cmd_hello", "hil_reply", "hil_log"} <= names
    loop = {function: body for function, _, body in functions(sources["server.c"])}
    assert "hil_dispatch" in loop["handle"]
    up = '#include "held.h"\nvoid hil_up(hil_server_t *s) { hil_soft_reset(s); }\n'
    circle = {**sources, "reply.c": sources["reply.c"] + up}
    assert include_violations(circle) == ["reply.c (layer 4) includes held.h (5)"]
    assert call_violations(circle) == ["hil_up (reply.c) calls hil_soft_reset (held.c)"]
