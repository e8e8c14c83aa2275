#!/usr/bin/env python3
"""Writes the seed corpora of fuzz_chan, fuzz_rpc_hdr and fuzz_tcp_frames
(formats in rpc/ring.h, rpc/rpc_wire.c, engine/providers/tcp/wire.h).
Run by hand when a format changes:  tests/fuzz/seeds_wire.py tests/fuzz/corpus"""
import os
import struct
import sys

out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "corpus")


def write(target, name, data):
    d = os.path.join(out, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


# ---- channel: selector, then (slot) expectations + header, or (ctl) message
def expect(seq, slot_payload, max_msg, written):
    return struct.pack("<IIQI", seq, slot_payload, max_msg, written)


def slot_hdr(flags, length, seq, credit, magic=0x4352, version=1):
    return struct.pack("<HBBIII", magic, version, flags, length, seq, credit)


write("fuzz_chan", "slot-eager", b"\x00" + expect(5, 8176, 1 << 20, 26) + slot_hdr(0, 10, 5, 3))
write("fuzz_chan", "slot-empty", b"\x00" + expect(0, 8176, 1 << 20, 16) + slot_hdr(0, 0, 0, 0))
write("fuzz_chan", "slot-rdv", b"\x00" + expect(9, 8176, 1 << 26, 48) + slot_hdr(1, 100000, 9, 1))
write("fuzz_chan", "slot-bad-seq", b"\x00" + expect(7, 8176, 1 << 20, 26) + slot_hdr(0, 10, 8, 0))
write("fuzz_chan", "slot-bad-magic", b"\x00" + expect(0, 8176, 1 << 20, 26) + slot_hdr(0, 10, 0, 0, 0x4353))
hello = struct.pack("<HBBIIIQ", 0x4352, 1, 1, 256, 8192, 0, 1 << 20) + bytes(range(32)) + bytes(8)
write("fuzz_chan", "ctl-hello", b"\x01" + hello)
write("fuzz_chan", "ctl-hello-reserved", b"\x01" + hello[:56] + b"\x01" + bytes(7))
write("fuzz_chan", "ctl-credit", b"\x01" + struct.pack("<HBBIQ", 0x4352, 1, 2, 7, 0))
write("fuzz_chan", "ctl-short", b"\x01" + struct.pack("<HB", 0x4352, 1))


# ---- rpc header: type flags code 0 | word | call id | timeout (us), then the body
def rpc(t, flags, code, word, call_id, timeout, body=b""):
    return struct.pack("<BBBBIQQ", t, flags, code, 0, word, call_id, timeout) + body


write("fuzz_rpc_hdr", "request", rpc(1, 0, 0, 0x1234abcd, 1, 1000000, b"\x81\xa1k\xa1v"))
write("fuzz_rpc_hdr", "request-oneway", rpc(1, 1, 0, 7, 2, 0))
write("fuzz_rpc_hdr", "response-ok", rpc(2, 0, 0, 0, 1, 0, b"\x90"))
write("fuzz_rpc_hdr", "response-status", rpc(2, 0, 5, 9, 3, 0, b"not found"))
write("fuzz_rpc_hdr", "response-long-status", rpc(2, 0, 13, 64, 3, 0, b"short"))
write("fuzz_rpc_hdr", "cancel", rpc(3, 0, 0, 0, 4, 0))
write("fuzz_rpc_hdr", "goaway", rpc(4, 0, 0, 0, 0, 0))
write("fuzz_rpc_hdr", "short", rpc(1, 0, 0, 1, 1, 0)[:20])


# ---- tcp frames: selector 0 (the harness fixes psn and rkey 1), then frames
def frame(op, psn=0, rkey=0, imm=0, offset=0, op0=0, op1=0, payload=b"", status=0, length=None):
    n = len(payload) if length is None else length
    return struct.pack("<BBHIIIQQQQ", op, 0, status, psn, rkey, imm, offset, n, op0, op1) + payload


SEND, SEND_IMM, WRITE, WRITE_IMM, READ_REQ, CAS, FADD, AWRITE, FLUSH = range(1, 10)
ACK, NAK, READ_RESP, ATOMIC_RESP, ERROR = 16, 17, 18, 19, 32
write("fuzz_tcp_frames", "send", b"\x00" + frame(SEND, payload=b"hello, rdmx"))
write("fuzz_tcp_frames", "send-imm", b"\x00" + frame(SEND_IMM, imm=0x11223344, payload=b"x" * 100))
write("fuzz_tcp_frames", "write", b"\x00" + frame(WRITE, rkey=1, offset=64, payload=bytes(range(256))))
write("fuzz_tcp_frames", "write-imm", b"\x00" + frame(WRITE_IMM, rkey=1, offset=4096, imm=5, payload=b"\xab" * 64))
write("fuzz_tcp_frames", "write-oob", b"\x00" + frame(WRITE, rkey=1, offset=65530, payload=b"\xcd" * 16))
write("fuzz_tcp_frames", "read", b"\x00" + frame(READ_REQ, rkey=1, offset=128, op0=512))
write("fuzz_tcp_frames", "atomics", b"\x00" + frame(FADD, rkey=1, offset=8, op0=1) +
      frame(CAS, rkey=1, offset=8, op0=1, op1=9) + frame(AWRITE, rkey=1, offset=16, op0=7) +
      frame(FLUSH, rkey=1, offset=0, op0=4096))
write("fuzz_tcp_frames", "mixed", b"\x00" + frame(SEND, payload=b"a") + frame(WRITE, rkey=1, payload=b"bb") +
      frame(READ_REQ, rkey=1, op0=8) + frame(SEND, psn=1, payload=b"c"))
write("fuzz_tcp_frames", "responses", b"\x00" + frame(ACK) + frame(NAK, status=1) +
      frame(READ_RESP, payload=b"zz") + frame(ATOMIC_RESP, op0=3))
write("fuzz_tcp_frames", "error", b"\x00" + frame(ERROR, status=4))
write("fuzz_tcp_frames", "truncated", b"\x00" + frame(WRITE, rkey=1, length=1 << 20, payload=b"short"))
write("fuzz_tcp_frames", "raw-garbage", b"\x01" + bytes(range(200)))
MSG = 10
write("fuzz_tcp_frames", "msg", b"\x00" + frame(MSG, rkey=1, offset=512, imm=3, payload=b"m" * 100) +
      frame(WRITE_IMM, rkey=1, offset=0, imm=4, payload=b"w" * 8) + frame(MSG, rkey=1, imm=5))
write("fuzz_tcp_frames", "msg-oob", b"\x00" + frame(MSG, rkey=1, offset=65500, payload=b"o" * 100))
# sealed (selector 2, then the record size byte): a light message refused at
# its first payload bytes when they start a record of their own, decrypted
# straight into the sink (rx.c sink_decrypt): records of 1 byte, and of 258
# bytes with the refused message's header ending the first one
write("fuzz_tcp_frames", "sealed-msg-oob-split", b"\x02\x00" + frame(MSG, rkey=1, offset=65500, payload=b"o" * 100))
write("fuzz_tcp_frames", "sealed-msg-oob-cut", b"\x02\x01" + frame(MSG, rkey=1, payload=b"a" * 162) +
      frame(MSG, rkey=1, offset=65500, payload=b"o" * 300))
