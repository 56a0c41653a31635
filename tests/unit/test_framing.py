"""Framing: frames survive garbage, split reads and damage is reported, never accepted."""

from __future__ import annotations

import random
import zlib

from hil.runner.framing import HEADER_SIZE, OVERHEAD, Corrupt, Frame, FrameDecoder, encode


def frames_of(decoder: FrameDecoder) -> list[Frame | Corrupt]:
    out: list[Frame | Corrupt] = []
    while (item := decoder.next()) is not None:
        out.append(item)
    return out


def test_layout_is_the_documented_one() -> None:
    frame = encode(0x11, 0x1234, b"abc")
    assert frame[:2] == b"\xa5\x5a"
    assert frame[2] == 0x11 and frame[3] == 0
    assert frame[4:6] == b"\x34\x12"
    assert frame[6:10] == (3).to_bytes(4, "little")
    assert frame[10:12] == (zlib.crc32(frame[:10]) & 0xFFFF).to_bytes(2, "little")
    assert frame[12:15] == b"abc"
    assert frame[15:] == zlib.crc32(frame[:15]).to_bytes(4, "little")
    assert len(frame) == OVERHEAD + 3


def test_parts_make_one_payload() -> None:
    assert encode(1, 2, b"ab", memoryview(b"cd"), b"") == encode(1, 2, b"abcd")


def test_round_trip_across_split_reads() -> None:
    payloads = [b"", b"x", bytes(range(256)) * 40]
    stream = b"".join(encode(0x20, i + 1, p) for i, p in enumerate(payloads))
    decoder = FrameDecoder()
    got: list[Frame | Corrupt] = []
    for i in range(0, len(stream), 7):  # awkward piece size
        decoder.feed(stream[i : i + 7])
        got += frames_of(decoder)
    assert got == [Frame(0x20, i + 1, p) for i, p in enumerate(payloads)]
    assert decoder.garbage == 0


def test_garbage_before_between_and_with_false_magic_is_skipped() -> None:
    a, b = encode(0x81, 1, b"first"), encode(0x81, 2, b"second")
    noise = b"boot: hello\r\n\xa5\xa5\x5a\x00\xff" + b"\xa5\x5a" + bytes(10)
    decoder = FrameDecoder()
    decoder.feed(noise + a + noise + b)
    assert frames_of(decoder) == [Frame(0x81, 1, b"first"), Frame(0x81, 2, b"second")]
    assert decoder.garbage == 2 * len(noise)


def test_damaged_payload_is_reported_with_its_seq_and_the_next_frame_survives() -> None:
    bad = bytearray(encode(0x91, 7, b"payload bytes"))
    bad[HEADER_SIZE + 3] ^= 0x10
    decoder = FrameDecoder()
    decoder.feed(bytes(bad) + encode(0x91, 8, b"ok"))
    assert frames_of(decoder) == [Corrupt(0x91, 7), Frame(0x91, 8, b"ok")]
    assert decoder.corrupt == 1


def test_damaged_header_is_garbage_not_a_wait_for_a_bogus_length() -> None:
    bad = bytearray(encode(0x91, 7, b"payload"))
    bad[8] ^= 0x40  # the length: without the header check the decoder would wait for 4 MiB
    decoder = FrameDecoder()
    decoder.feed(bytes(bad) + encode(0x91, 8, b"next"))
    assert frames_of(decoder) == [Frame(0x91, 8, b"next")]


def test_a_frame_longer_than_allowed_is_refused() -> None:
    decoder = FrameDecoder(max_payload=16)
    decoder.feed(encode(1, 1, bytes(17)) + encode(1, 2, bytes(16)))
    assert frames_of(decoder) == [Frame(1, 2, bytes(16))]


def test_a_truncated_frame_is_given_up_and_reported() -> None:
    frame = encode(0x81, 3, bytes(100))
    decoder = FrameDecoder()
    decoder.feed(frame[:-10])
    assert decoder.next() is None  # waits for the tail
    assert decoder.abandon_partial() == Corrupt(0x81, 3)
    decoder.feed(encode(0x81, 4, b"again"))
    assert frames_of(decoder) == [Frame(0x81, 4, b"again")]


def test_retransmission_inside_a_frame_whose_bytes_were_dropped_is_found() -> None:
    """Bytes lost from frame 1 make it claim the start of its repeat; the hunt resumes past
    its magic, so the repeat (whole) is still found."""
    first = encode(0x11, 5, bytes(range(200)))
    dropped = first[:50] + first[60:]
    decoder = FrameDecoder()
    decoder.feed(dropped + first + encode(0x11, 6, b"tail"))
    items = frames_of(decoder)
    assert Frame(0x11, 5, bytes(range(200))) in items
    assert items[-1] == Frame(0x11, 6, b"tail")


def test_random_damage_never_yields_a_frame_that_was_not_sent() -> None:
    rng = random.Random(1234)
    sent = [
        encode(0x90 + i % 5, i % 65535 + 1, rng.randbytes(rng.randint(0, 3000))) for i in range(300)
    ]
    originals = {bytes(f) for f in sent}
    stream = bytearray()
    for frame in sent:
        piece = bytearray(frame)
        roll = rng.random()
        if roll < 0.2:
            piece[rng.randrange(len(piece))] ^= 1 << rng.randrange(8)
        elif roll < 0.3:
            cut = rng.randrange(len(piece))
            del piece[cut : cut + rng.randint(1, 20)]
        elif roll < 0.4:
            piece[rng.randrange(len(piece)) : 0] = rng.randbytes(rng.randint(1, 30))
        stream += piece
    decoder = FrameDecoder()
    accepted = 0
    for i in range(0, len(stream), 4096):
        decoder.feed(bytes(stream[i : i + 4096]))
        for item in frames_of(decoder):
            if isinstance(item, Frame):
                assert encode(item.type, item.seq, item.payload) in originals
                accepted += 1
    assert 150 < accepted < 300  # the undamaged ones come through, the damaged ones do not
    assert decoder.corrupt > 0 and decoder.garbage > 0
