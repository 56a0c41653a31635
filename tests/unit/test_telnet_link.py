"""The telnet link's byte handling: 0xFF doubled going out, IAC sequences taken out coming in
(also when cut between two reads), BINARY accepted and other options refused; and the link on
a real socket, against a peer that speaks telnet as ser2net does."""

from __future__ import annotations

import socket
import threading

import pytest

from hil.errors import TransportError
from hil.transports.telnet_link import (
    BINARY,
    DO,
    DONT,
    ECHO,
    IAC,
    SB,
    SE,
    SGA,
    WILL,
    WONT,
    TelnetDecoder,
    TelnetLink,
    escape,
)


def test_escape_doubles_every_iac_byte() -> None:
    assert escape(b"a\xffb\xff\xff") == b"a\xff\xffb\xff\xff\xff\xff"
    assert escape(b"") == b""


def test_negotiation_is_answered_and_taken_out_of_the_data() -> None:
    decoder = TelnetDecoder()
    data, answers = decoder.feed(
        bytes([IAC, WILL, SGA, IAC, DO, BINARY, IAC, WILL, ECHO, IAC, DO, 44]) + b"hello"
    )
    assert data == b"hello"
    assert answers == bytes([IAC, DO, SGA, IAC, WILL, BINARY, IAC, DONT, ECHO, IAC, WONT, 44])


def test_doubled_iac_is_one_data_byte_and_subnegotiation_is_dropped() -> None:
    decoder = TelnetDecoder()
    stream = b"a" + bytes([IAC, IAC]) + b"b" + bytes([IAC, SB, 44, 1, IAC, IAC, 0, IAC, SE]) + b"c"
    assert decoder.feed(stream) == (b"a\xffbc", b"")


@pytest.mark.parametrize("cut", range(1, 12))
def test_a_sequence_cut_between_reads_is_completed_by_the_next(cut: int) -> None:
    stream = b"x" + bytes([IAC, DO, BINARY, IAC, IAC, IAC, SB, 44, 5, IAC, SE]) + b"yz"
    decoder = TelnetDecoder()
    first = decoder.feed(stream[:cut])
    second = decoder.feed(stream[cut:])
    assert first[0] + second[0] == b"x\xffyz"
    assert first[1] + second[1] == bytes([IAC, WILL, BINARY])


def test_link_carries_binary_frames_both_ways_over_a_socket() -> None:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port = server.getsockname()[1]
    payload = bytes(range(256)) * 64  # every byte value, 0xFF included
    seen: dict[str, bytes] = {}

    def peer() -> None:  # offers options as ser2net does, echoes what it gets unescaped
        conn, _ = server.accept()
        with conn:
            conn.sendall(bytes([IAC, WILL, SGA, IAC, DO, BINARY]))
            decoder, got, raw = TelnetDecoder(), b"", b""
            while len(got) < len(payload):
                chunk = conn.recv(65536)
                raw += chunk
                got += decoder.feed(chunk)[0]
            seen["got"], seen["raw"] = got, raw
            conn.sendall(escape(got))

    thread = threading.Thread(target=peer)
    thread.start()
    link = TelnetLink(f"telnet://127.0.0.1:{port}").open()
    try:
        link.write(payload)
        back = b""
        while len(back) < len(payload):
            chunk = link.read(1 << 20, 5.0)
            assert chunk, "the echo stopped"
            back += chunk
    finally:
        link.close()
        thread.join()
        server.close()
    assert seen["got"] == payload and back == payload
    assert seen["raw"].startswith(bytes([IAC, WILL, BINARY, IAC, DO, BINARY]))  # 8-bit clean


def test_a_closed_connection_is_a_transport_error() -> None:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    link = TelnetLink(f"telnet://127.0.0.1:{server.getsockname()[1]}").open()
    conn, _ = server.accept()
    conn.recv(100)  # read what the link sent, so closing is an orderly end of stream
    conn.close()
    server.close()
    with pytest.raises(TransportError, match="closed the connection"):
        link.read(100, 2.0)
    link.close()


def test_nothing_listening_is_a_transport_error_with_the_fix() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(TransportError, match="cannot connect") as caught:
        TelnetLink(f"telnet://127.0.0.1:{port}").open()
    assert "ser2net" in str(caught.value)
