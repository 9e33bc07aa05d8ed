"""The worker's end of the socket to its rank: framed messages, each a JSON object, a binary
tail and descriptors passed along with it (SCM_RIGHTS).

A frame is a 12-byte header (u32 little-endian JSON length, u64 tail length), the JSON text
(UTF-8) and the tail. Descriptors travel with the header's bytes. The C++ end is
actors/models/torch_module/worker_channel.cpp; both must agree on this.
"""
import array
import json
import socket
import struct

HEADER = struct.Struct("<IQ")
MAX_FDS = 8


class ChannelClosed(Exception):
    """The rank closed its end (it ended or dropped the model): the worker exits."""


class Channel:
    def __init__(self, fd):
        self._sock = socket.socket(fileno=fd)

    def receive(self):
        """The next message as (body, tail bytes, list of descriptors)."""
        header = bytearray()
        fds = []
        while len(header) < HEADER.size:
            data, ancillary, _flags, _addr = self._sock.recvmsg(
                HEADER.size - len(header), socket.CMSG_SPACE(MAX_FDS * array.array("i").itemsize))
            for level, kind, payload in ancillary:
                if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                    received = array.array("i")
                    received.frombytes(payload[: len(payload) - len(payload) % received.itemsize])
                    fds.extend(received)
            if not data:
                raise ChannelClosed()
            header += data
        json_len, tail_len = HEADER.unpack(header)
        body = json.loads(self._read_exactly(json_len).decode("utf-8"))
        tail = self._read_exactly(tail_len) if tail_len else b""
        return body, tail, fds

    def send(self, body, tail=b""):
        text = json.dumps(body, allow_nan=False).encode("utf-8")
        self._sock.sendall(HEADER.pack(len(text), len(tail)) + text)
        if tail:
            self._sock.sendall(tail)

    def _read_exactly(self, count):
        out = bytearray(count)
        view = memoryview(out)
        got = 0
        while got < count:
            n = self._sock.recv_into(view[got:], count - got)
            if n == 0:
                raise ChannelClosed()
            got += n
        return bytes(out)
