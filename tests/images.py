"""Small, real image files for fixtures: the build checks every image by content (mediacheck.py)."""

from __future__ import annotations

import struct
import zlib


def png(shade: int = 0, width: int = 2, height: int = 2) -> bytes:
    """A valid grey PNG of `width` x `height`; another `shade` (0-255) gives other bytes."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    rows = b"".join(b"\x00" + bytes([shade % 256]) * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)  # 8-bit greyscale
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows, 9)) + chunk(b"IEND", b"")


SVG = b'<svg xmlns="http://www.w3.org/2000/svg" width="4" height="4"><rect width="4" height="4" fill="#222"/></svg>\n'
"""A harmless SVG, as the build accepts it."""
