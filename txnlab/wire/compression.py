"""Compressed record batches from real clients: Kafka's four codecs, checked on produce, stored as sent.

A v2 batch whose attributes name a codec carries its records section compressed.  Kafka's broker keeps such a
batch as the producer compressed it (same codec in, same codec out) after checking that it decompresses and
holds as many records as the header says (``LogValidator``); a batch that does not is CORRUPT_MESSAGE, and
zstd before Produce v7 is UNSUPPORTED_COMPRESSION_TYPE (``ProduceRequest.validateRecords``, KIP-110).  The door
does the same: ``decompress`` is called once on produce (the result is kept for whoever reads the records),
and a Fetch answer returns the compressed bytes unchanged.

Formats, as Kafka's clients write them: gzip is a gzip stream; snappy is either one raw snappy block
(librdkafka, franz-go) or xerial's framing (``\\x82SNAPPY\\x00``, then big-endian length-prefixed blocks: the
Java client's snappy-java); lz4 is an LZ4 frame (KIP-57); zstd is a zstd frame.  The codecs are cramjam's.
"""
from __future__ import annotations

import struct

import cramjam

from ..protocol.errors import Errors

NONE, GZIP, SNAPPY, LZ4, ZSTD = 0, 1, 2, 3, 4
CODECS = {NONE: "none", GZIP: "gzip", SNAPPY: "snappy", LZ4: "lz4", ZSTD: "zstd"}
XERIAL_MAGIC = b"\x82SNAPPY\x00"
MAX_DECOMPRESSED = 100 * 1024 * 1024       # a batch never grows past socket.request.max.bytes here


class CompressionError(Exception):
    """A compressed batch the broker refuses: ``error`` is Kafka's code."""

    def __init__(self, error: Errors, message: str) -> None:
        super().__init__(message)
        self.error = error
        self.message = message


def check_codec(codec: int, produce_version: int) -> None:
    """Kafka's rules for a codec before any byte is read."""
    if codec not in CODECS:
        raise CompressionError(Errors.UNSUPPORTED_COMPRESSION_TYPE,
                               f"compression codec id {codec} is not one of Kafka's (0..4)")
    if codec == ZSTD and produce_version < 7:
        raise CompressionError(Errors.UNSUPPORTED_COMPRESSION_TYPE,
                               f"compression.type zstd needs Produce v7 or later (KIP-110), the request is "
                               f"v{produce_version}")


def _snappy(data) -> bytes:
    raw = bytes(data)
    if not raw.startswith(XERIAL_MAGIC):
        return bytes(cramjam.snappy.decompress_raw(raw))
    pos, out = 16, bytearray()                     # magic (8) + version (4) + compatible version (4)
    while pos < len(raw):
        if pos + 4 > len(raw):
            raise ValueError("a xerial snappy block length runs past the end")
        (n,) = struct.unpack_from(">i", raw, pos)
        pos += 4
        if n < 0 or pos + n > len(raw):
            raise ValueError(f"a xerial snappy block of {n} bytes runs past the end")
        out += bytes(cramjam.snappy.decompress_raw(raw[pos:pos + n]))
        pos += n
        if len(out) > MAX_DECOMPRESSED:
            raise ValueError("the batch decompresses to more than 100 MiB")
    return bytes(out)


_DECOMPRESS = {
    GZIP: lambda d: bytes(cramjam.gzip.decompress(bytes(d))),
    SNAPPY: _snappy,
    LZ4: lambda d: bytes(cramjam.lz4.decompress(bytes(d))),
    ZSTD: lambda d: bytes(cramjam.zstd.decompress(bytes(d))),
}


def decompress(codec: int, data) -> bytes:
    """The records section of a batch compressed with ``codec``; CORRUPT_MESSAGE when it does not decompress."""
    try:
        out = _DECOMPRESS[codec](data)
    except Exception as e:  # noqa: BLE001 - each codec raises its own kind for bad input
        raise CompressionError(Errors.CORRUPT_MESSAGE, f"the {CODECS[codec]} records do not decompress "
                                                       f"({type(e).__name__}: {e})") from None
    if len(out) > MAX_DECOMPRESSED:
        raise CompressionError(Errors.CORRUPT_MESSAGE, "the batch decompresses to more than 100 MiB")
    return out


def compress(codec: int, data: bytes) -> bytes:
    """``data`` compressed as a client of ``codec`` would (tests build compressed batches with it)."""
    if codec == GZIP:
        return bytes(cramjam.gzip.compress(data))
    if codec == SNAPPY:
        return bytes(cramjam.snappy.compress_raw(data))
    if codec == LZ4:
        return bytes(cramjam.lz4.compress(data))
    if codec == ZSTD:
        return bytes(cramjam.zstd.compress(data))
    return data
