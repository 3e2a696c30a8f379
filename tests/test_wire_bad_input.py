"""Bad input at the wire door: Kafka's error response or a closed connection, never a crashed kernel, a stuck
lock or a leaked thread; the next real client is served as before."""
from __future__ import annotations

import socket
import struct
import threading

from txnlab.protocol.errors import Errors
from txnlab.protocol.record_batch import Record, RecordBatch
from txnlab.wire import codec, compression
from txnlab.wire.records import encode_batch
from wire_helpers import consumer, lab, producer, read_all, values
from wire_raw import dial, frame, response


def closed_by_door(s: socket.socket) -> bool:
    try:
        return s.recv(1) == b""
    except ConnectionResetError:
        return True


def produce_frame(records: bytes, version: int = 9):
    cls = codec.request_type(0, version)
    Topic = codec.nested(cls, "topic_data")
    Part = codec.nested(Topic, "partition_data")
    body = codec.build(cls, transactional_id=None, acks=1, timeout=5000,
                       topic_data=(codec.build(Topic, name="t", partition_data=(
                           codec.build(Part, index=0, records=records),)),))
    return frame(0, version, body)


def still_serves(door) -> None:
    p = producer(door)
    p.produce("t", value=b"after the bad input")
    assert p.flush(30) == 0


def test_truncated_negative_and_oversized_frames_close_the_connection():
    with lab() as (c, door):
        s = dial(door)
        s.sendall(struct.pack(">i", 100) + b"short")       # then the client goes away mid-frame
        s.close()
        for prefix in (struct.pack(">i", -5), struct.pack(">i", 2**31 - 1)):
            s = dial(door)
            s.sendall(prefix)
            assert closed_by_door(s)
            s.close()
        assert any("frame size" in e.text for e in c.trace.events)
        still_serves(door)


def test_an_unknown_api_key_or_version_closes_and_an_unknown_api_versions_version_is_answered():
    with lab() as (c, door):
        s = dial(door)
        s.sendall(struct.pack(">ihhih", 10, 77, 0, 1, 0))    # api key 77 is not spoken here
        assert closed_by_door(s)
        s = dial(door)
        s.sendall(struct.pack(">ihhih", 10, 0, 1, 1, 0))     # Produce v1 (magic v0/v1 era): not spoken
        assert closed_by_door(s)
        s = dial(door)
        s.sendall(struct.pack(">ihhih", 10, 18, 99, 5, 0))   # ApiVersions v99: answered in v0 (KIP-511)
        cid, body = response(s, 18, 0)
        assert cid == 5 and body.error_code == Errors.UNSUPPORTED_VERSION
        advertised = {k.api_key: (k.min_version, k.max_version) for k in body.api_keys}
        assert advertised == {k: (lo, hi) for k, (_, lo, hi) in codec.VERSIONS.items()}
        s.close()
        still_serves(door)


def compressed(good: bytes, codec_id: int, records: bytes) -> bytes:
    """``good``'s header over another records section, with codec ``codec_id`` and a fresh CRC32C."""
    import crc32c
    out = bytearray(good[:61]) + records
    struct.pack_into(">i", out, 8, len(out) - 12)
    out[22] |= codec_id
    struct.pack_into(">I", out, 17, crc32c.crc32c(bytes(out[21:])))
    return bytes(out)


def test_a_batch_with_a_wrong_crc_or_a_corrupt_compressed_section_gets_corrupt_message():
    with lab() as (c, door):
        good = encode_batch(RecordBatch((Record(None, b"x", (), 1), Record(b"k", b"y", (), 2))))
        bad_crc = bytearray(good)
        bad_crc[-1] ^= 0xFF
        s = dial(door)
        s.sendall(produce_frame(bytes(bad_crc)))
        _, body = response(s, 0, 9)
        part = body.responses[0].partition_responses[0]
        assert part.error_code == Errors.CORRUPT_MESSAGE and "CRC32C" in part.error_message
        s.sendall(produce_frame(compressed(good, compression.GZIP, good[61:])))   # gzip bit over plain bytes
        _, body = response(s, 0, 9)
        part = body.responses[0].partition_responses[0]
        assert part.error_code == Errors.CORRUPT_MESSAGE and "gzip" in part.error_message
        one = compression.compress(compression.SNAPPY, good[61:good.index(b"x") + 2])  # only the first record
        s.sendall(produce_frame(compressed(good, compression.SNAPPY, one)))
        _, body = response(s, 0, 9)
        part = body.responses[0].partition_responses[0]
        assert part.error_code == Errors.CORRUPT_MESSAGE and "2 records" in part.error_message
        zstd = compressed(good, compression.ZSTD, compression.compress(compression.ZSTD, good[61:]))
        s.sendall(produce_frame(zstd))                         # Produce v9 may carry zstd
        _, body = response(s, 0, 9)
        assert body.responses[0].partition_responses[0].error_code == Errors.NONE
        s.sendall(produce_frame(zstd, version=5))              # zstd before Produce v7 (KIP-110)
        _, body = response(s, 0, 5)
        part = body.responses[0].partition_responses[0]
        assert part.error_code == Errors.UNSUPPORTED_COMPRESSION_TYPE     # v5 has no error message field
        s.sendall(produce_frame(good))                         # the same connection still works
        _, body = response(s, 0, 9)
        assert body.responses[0].partition_responses[0].error_code == Errors.NONE
        s.close()
        assert c.log("t").log_end_offset == 4                  # the zstd batch and the plain one


PAD = b"." * 300


def test_compressed_batches_are_kept_as_sent_and_a_read_committed_consumer_reads_them():
    with lab() as (c, door):
        for codec_name in ("gzip", "snappy", "lz4", "zstd"):
            p = producer(door, **{"compression.type": codec_name, "enable.idempotence": True})
            for i in range(5):
                p.produce("t", value=f"{codec_name}-{i}".encode() + PAD)    # librdkafka keeps what shrinks
            assert p.flush(30) == 0
        batches = [b for b in c.log("t").batches if not b.is_control]
        assert [compression.CODECS[b._rows.attributes & 7] for b in batches] == ["gzip", "snappy", "lz4", "zstd"]
        assert [r.value for r in batches[1].records] == [f"snappy-{i}".encode() + PAD for i in range(5)]
        got = read_all(consumer(door), ["t"], 20)
        assert values(got) == [f"{n}-{i}".encode() + PAD for n in ("gzip", "snappy", "lz4", "zstd") for i in range(5)]


def test_an_idle_connection_is_closed():
    with lab(idle_timeout_s=0.5) as (c, door):
        s = dial(door)
        assert closed_by_door(s)                               # never sent anything: closed as idle
        still_serves(door)


def test_many_connections_do_not_stop_the_door():
    with lab() as (c, door):                                  # the default idle timeout: none of them is idle yet
        many = [dial(door, b) for _ in range(100) for b in c.broker_ids]
        still_serves(door)
        for x in many:                                         # every one of them is a live connection
            x.sendall(frame(18, 3, codec.request_type(18, 3)(client_software_name="t", client_software_version="1"), cid=9))
        assert all(response(x, 18, 3)[0] == 9 for x in many)
        assert len(door.connections) >= 300
        for x in many:
            x.close()


def test_closing_the_door_ends_its_thread_and_its_sockets():
    before = {t.name for t in threading.enumerate()}
    with lab() as (c, door):
        still_serves(door)
        name = door._thread.name
    assert name not in {t.name for t in threading.enumerate()} - before
    assert not door.open and door.connections == {}
    try:
        socket.create_connection(("127.0.0.1", door.port_of(0)), timeout=5).close()
        refused = False
    except OSError:
        refused = True
    assert refused
