#!/usr/bin/env python3
"""Records dump_restore_redis_7_0_15.tsv: DUMP payloads of values of every type and
encoding, and what a running redis-server 7.0.15 answers after restoring each (its data
is flushed):

    redis-server --port 7393 --save '' --appendonly no --daemonize yes --enable-debug-command yes
    python3 dump_restore_redis_7_0_15.py [port] > dump_restore_redis_7_0_15.tsv

(DEBUG QUICKLIST-PACKED-THRESHOLD makes a list with a plain node.)

Most payloads are redis-server's own DUMPs. The older RDB types Redis 7.0 still loads but
no longer writes (1 list, 3 zset, 9 zipmap hash, 10 ziplist list, 12 ziplist zset,
13 ziplist hash, 14 quicklist of ziplists, 15 stream before 7.0) are built here, byte by
byte, and recorded only once redis-server has restored them. Some payloads redis-server
refuses are recorded too, with its error.

A new recording differs from the committed one only where streams record the server's
clock (delivery and seen times) and in the payloads that hold them.

Format: `case <name> <payload hex> <reply to RESTORE k 0 payload>`, then the read
commands on k and their replies, one per line, tab-separated. Replies are raw RESP: CRLF
written as |, a backslash as \\\\, other bytes outside printable ASCII (and |) as \\xNN.
"""
import random
import socket
import sys


class Conn:
    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port))
        self.buf = b""

    def _fill(self, n):
        while len(self.buf) < n:
            chunk = self.s.recv(1 << 20)
            if not chunk:
                raise EOFError
            self.buf += chunk

    def _line(self):
        while b"\r\n" not in self.buf:
            self._fill(len(self.buf) + 1)
        i = self.buf.index(b"\r\n") + 2
        line, self.buf = self.buf[:i], self.buf[i:]
        return line

    def _take(self, n):
        self._fill(n)
        data, self.buf = self.buf[:n], self.buf[n:]
        return data

    def raw_reply(self):
        """One reply as its raw RESP bytes."""
        line = self._line()
        t, rest = line[:1], line[1:-2]
        if t == b"$":
            n = int(rest)
            return line if n < 0 else line + self._take(n + 2)
        if t in (b"*", b"%", b"~"):
            n = int(rest)
            if t == b"%":
                n *= 2
            out = line
            for _ in range(max(n, 0)):
                out += self.raw_reply()
            return out
        return line

    def send(self, *args):
        out = b"*%d\r\n" % len(args)
        for a in args:
            if isinstance(a, str):
                a = a.encode()
            elif isinstance(a, int):
                a = str(a).encode()
            out += b"$%d\r\n%s\r\n" % (len(a), a)
        self.s.sendall(out)
        return self.raw_reply()

    def bulk(self, *args):
        r = self.send(*args)
        assert r.startswith(b"$") and not r.startswith(b"$-1"), (args, r)
        return r[r.index(b"\r\n") + 2:-2]


def escape(b):
    out = []
    i = 0
    while i < len(b):
        if b[i:i + 2] == b"\r\n":
            out.append("|")
            i += 2
            continue
        c = b[i]
        if c == 0x5C:
            out.append("\\\\")
        elif 0x20 <= c < 0x7F and c != 0x7C:
            out.append(chr(c))
        else:
            out.append("\\x%02x" % c)
        i += 1
    return "".join(out)


# ---- RDB pieces for the hand-built payloads ----

def crc64(data):
    poly = 0x95AC9329AC4BC9B5  # Jones, reflected
    crc = 0
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ poly if crc & 1 else crc >> 1
    return crc


def payload(body):
    b = body + (10).to_bytes(2, "little")
    return b + crc64(b).to_bytes(8, "little")


def rlen(n):
    if n < 1 << 6:
        return bytes([n])
    if n < 1 << 14:
        return bytes([0x40 | n >> 8, n & 0xFF])
    if n <= 0xFFFFFFFF:
        return b"\x80" + n.to_bytes(4, "big")
    return b"\x81" + n.to_bytes(8, "big")


def rstr(s):
    if isinstance(s, str):
        s = s.encode()
    return rlen(len(s)) + s


def zl_entry(v):
    """A ziplist entry's encoding and data (without its prevlen)."""
    if isinstance(v, int):
        if 0 <= v <= 12:
            return bytes([0xF1 + v])
        if -128 <= v < 128:
            return b"\xfe" + v.to_bytes(1, "little", signed=True)
        if -(1 << 15) <= v < 1 << 15:
            return b"\xc0" + v.to_bytes(2, "little", signed=True)
        if -(1 << 23) <= v < 1 << 23:
            return b"\xf0" + v.to_bytes(3, "little", signed=True)
        if -(1 << 31) <= v < 1 << 31:
            return b"\xd0" + v.to_bytes(4, "little", signed=True)
        return b"\xe0" + v.to_bytes(8, "little", signed=True)
    if isinstance(v, str):
        v = v.encode()
    n = len(v)
    if n < 64:
        return bytes([n]) + v
    if n < 16384:
        return bytes([0x40 | n >> 8, n & 0xFF]) + v
    return b"\x80" + n.to_bytes(4, "big") + v


def ziplist(values):
    body = b""
    prev = 0
    tail = 10
    for v in values:
        tail = 10 + len(body)
        e = zl_entry(v)
        pl = bytes([prev]) if prev < 254 else b"\xfe" + prev.to_bytes(4, "little")
        body += pl + e
        prev = len(pl) + len(e)
    total = 10 + len(body) + 1
    return total.to_bytes(4, "little") + tail.to_bytes(4, "little") + min(len(values), 65535).to_bytes(2, "little") + body + b"\xff"


def zipmap(pairs):
    def zlen(n):
        return bytes([n]) if n < 254 else b"\xfe" + n.to_bytes(4, "little")
    out = bytes([len(pairs) if len(pairs) < 254 else 254])
    for f, v, free in pairs:
        f, v = f.encode(), v.encode()
        out += zlen(len(f)) + f + zlen(len(v)) + bytes([free]) + v + b"\x00" * free
    return out + b"\xff"


class RdbCursor:
    """Walks a Redis 7.0 stream payload to rewrite it as the pre-7.0 stream type."""

    def __init__(self, b):
        self.b, self.p = b, 0

    def length(self):
        first = self.b[self.p]
        kind = first >> 6
        if kind == 0:
            self.p += 1
            return first & 0x3F
        if kind == 1:
            v = (first & 0x3F) << 8 | self.b[self.p + 1]
            self.p += 2
            return v
        if first == 0x80:
            v = int.from_bytes(self.b[self.p + 1:self.p + 5], "big")
            self.p += 5
            return v
        assert first == 0x81, first
        v = int.from_bytes(self.b[self.p + 1:self.p + 9], "big")
        self.p += 9
        return v

    def string(self):
        first = self.b[self.p]
        if first >> 6 != 3:
            n = self.length()
            self.p += n
            return
        self.p += 1
        enc = first & 0x3F
        if enc == 3:
            clen = self.length()
            self.length()
            self.p += clen
        else:
            self.p += {0: 1, 1: 2, 2: 4}[enc]

    def span(self, f):
        start = self.p
        f()
        return self.b[start:self.p]


def stream_v1(p):
    """A stream payload of type 19 rewritten as type 15: without the first and largest
    deleted ids, the added count and the groups' read counts."""
    c = RdbCursor(p[:-10])
    assert c.b[0] == 19
    c.p = 1
    out = b"\x0f"
    nodes_start = c.p
    for _ in range(c.length()):
        c.string()
        c.string()
    out += c.b[nodes_start:c.p]
    out += c.span(lambda: [c.length() for _ in range(3)])  # length, last id
    for _ in range(5):  # first id, max deleted id, entries added
        c.length()
    groups = c.length()
    out += rlen(groups)
    for _ in range(groups):
        out += c.span(lambda: (c.string(), c.length(), c.length()))
        c.length()  # entries read
        def pel():
            for _ in range(c.length()):
                c.p += 16 + 8
                c.length()
        out += c.span(pel)
        def consumers():
            for _ in range(c.length()):
                c.string()
                c.p += 8
                owned = c.length()
                c.p += 16 * owned
        out += c.span(consumers)
    assert c.p == len(c.b)
    return payload(out)


# ---- the cases ----

def reads(kind, extra=()):
    common = {
        "string": ["GET k", "STRLEN k", "OBJECT ENCODING k", "TYPE k"],
        "list": ["LRANGE k 0 -1", "LLEN k", "OBJECT ENCODING k"],
        "set": ["SORT k ALPHA", "SCARD k", "OBJECT ENCODING k"],
        "hash": ["HLEN k", "OBJECT ENCODING k"],
        "zset": ["ZRANGE k 0 -1 WITHSCORES", "ZCARD k", "OBJECT ENCODING k"],
        "stream": ["XINFO STREAM k FULL", "XRANGE k - +", "XREVRANGE k + -", "XLEN k", "XINFO GROUPS k"],
    }[kind]
    return common + list(extra)


def main():
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 7393
    c = Conn(port)
    rng = random.Random(70015)
    out = sys.stdout
    out.write("# DUMP payloads and the replies of redis-server 7.0.15 after RESTORE k 0 <payload>,\n")
    out.write("# recorded by dump_restore_redis_7_0_15.py (see there for the format).\n")
    # Memoria's default, and redis.conf's (redis-server's built-in default is 512).
    c.send("CONFIG", "SET", "hash-max-listpack-entries", "128")

    def record(name, p, read_cmds):
        c.send("FLUSHALL")
        r = c.send("RESTORE", "k", "0", p)
        out.write("case\t%s\t%s\t%s\n" % (name, p.hex(), escape(r)))
        if r != b"+OK\r\n":
            return
        for cmd in read_cmds:
            out.write("%s\t%s\n" % (cmd, escape(c.send(*cmd.split(" ")))))

    def case(name, kind, build, extra=(), config=()):
        """Builds k with `build` (commands), DUMPs it, records RESTORE and the reads."""
        c.send("FLUSHALL")
        for param, value in config:
            c.send("CONFIG", "SET", param, value)
        for cmd in build:
            r = c.send(*cmd)
            assert not r.startswith(b"-"), (cmd, r)
        p = c.bulk("DUMP", "k")
        for param, value in config:
            c.send("CONFIG", "SET", param, DEFAULTS[param])
        record(name, p, reads(kind, extra))
        return p

    def word(n):
        return "".join(rng.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(n))

    # Strings: plain, integer-encoded (8, 16, 32 bits), a 64-bit integer (saved as text),
    # non-canonical numbers, LZF-compressed, embstr/raw lengths, binary.
    for name, v in [
        ("string", "hello"),
        ("string_empty", ""),
        ("string_int8", "-7"),
        ("string_int16", "12345"),
        ("string_int32", "-2147483648"),
        ("string_int64", "9223372036854775807"),
        ("string_not_canonical", "007"),
        ("string_float", "3.14"),
        ("string_lzf", "abc" * 100),
        ("string_embstr", word(44)),
        ("string_raw", word(300)),
        ("string_binary", "\x00\x01\xff\r\n|\\x"),
    ]:
        case(name, "string", [("SET", "k", v.encode("latin-1"))])
    case("string_lzf_big", "string", [("SET", "k", ("memoria " * 3000).encode())], extra=["GETRANGE k 23990 -1"])
    # HyperLogLogs are strings: sparse, and dense past hll-sparse-max-bytes.
    case("hll_sparse", "string", [("PFADD", "k", "a", "b", "c")], extra=["PFCOUNT k"])
    case("hll_dense", "string", [("PFADD", "k", *["e%d" % i for i in range(3000)])], extra=["PFCOUNT k"])

    # Lists (RDB_TYPE_LIST_QUICKLIST_2): one node, many nodes, compressed nodes, a plain node.
    small = ["a", "b", "1", "-2", "hello", "", "1234567890123", "-9223372036854775808"]
    case("list_small", "list", [("RPUSH", "k", *small)])
    big = [word(rng.randint(0, 40)) if i % 3 else str(rng.randint(-10 ** 12, 10 ** 12)) for i in range(1500)]
    case("list_many_nodes", "list", [("RPUSH", "k", *big[:750]), ("RPUSH", "k", *big[750:])])
    case("list_compressed", "list", [("RPUSH", "k", *(["abcabc" * 10] * 600))], config=[("list-compress-depth", "1")])
    case(
        "list_plain_node",
        "list",
        [("DEBUG", "QUICKLIST-PACKED-THRESHOLD", "100"), ("RPUSH", "k", "a", "b", "x" * 200, "c", "y" * 150), ("DEBUG", "QUICKLIST-PACKED-THRESHOLD", str(1 << 30))],
    )

    # Sets: intsets of each width (RDB_TYPE_SET_INTSET), hash tables (RDB_TYPE_SET).
    case("set_intset16", "set", [("SADD", "k", "1", "2", "3", "-5")], extra=["SMEMBERS k"])
    case("set_intset32", "set", [("SADD", "k", "1", "70000", "-70000")], extra=["SMEMBERS k"])
    case("set_intset64", "set", [("SADD", "k", "1", str(1 << 40), str(-(1 << 62)))], extra=["SMEMBERS k"])
    case("set_strings", "set", [("SADD", "k", "a", "b", "1", "hello", "")])
    case("set_many_ints", "set", [("SADD", "k", *[str(i * 7 - 1000) for i in range(600)])])
    case("set_many_strings", "set", [("SADD", "k", *[word(8) for _ in range(300)])])

    # Hashes: listpack (RDB_TYPE_HASH_LISTPACK), hash tables (RDB_TYPE_HASH) by count and
    # by a long value.
    case("hash_listpack", "hash", [("HSET", "k", "f1", "v1", "2", "12345", "f3", "", "num", "-9223372036854775808")], extra=["HGETALL k"])
    fields = ["field%d" % i for i in range(200)]
    hbuild = [("HSET", "k", *sum([[f, word(rng.randint(0, 30))] for f in fields], []))]
    case("hash_table", "hash", hbuild, extra=["HMGET k " + " ".join(fields)])
    case("hash_long_value", "hash", [("HSET", "k", "a", "1", "b", "z" * 100)], extra=["HMGET k a b"])

    # Sorted sets: listpack (RDB_TYPE_ZSET_LISTPACK), skiplists (RDB_TYPE_ZSET_2) by count
    # and by a long member; integral, fractional and infinite scores.
    case("zset_listpack", "zset", [("ZADD", "k", "1", "a", "2.5", "b", "-inf", "c", "inf", "d", "0", "e", "-0", "f", "1e300", "g", "0.1", "h", "-3", "i")])
    zbuild = [("ZADD", "k", *sum([[repr(rng.uniform(-1e6, 1e6)) if i % 2 else str(rng.randint(-100, 100)), "m%d" % i] for i in range(300)], []))]
    case("zset_skiplist", "zset", zbuild)
    case("zset_long_member", "zset", [("ZADD", "k", "1", "a", "2", "m" * 100)])

    # Streams (RDB_TYPE_STREAM_LISTPACKS_2).
    case("stream_simple", "stream", [("XADD", "k", "1-1", "f", "v"), ("XADD", "k", "1-2", "f", "v2"), ("XADD", "k", "5-0", "other", "x", "n", "12")])
    groups = [
        ("CONFIG", "SET", "stream-node-max-entries", "4"),
        *[("XADD", "k", "%d-%d" % (1000 + i // 3, i % 3), *(["f", str(i), "g", word(5)] if i % 4 else ["h", word(3)])) for i in range(20)],
        ("XDEL", "k", "1001-1", "1003-0"),
        ("XGROUP", "CREATE", "k", "g1", "0"),
        ("XGROUP", "CREATE", "k", "g2", "$"),
        ("XGROUP", "CREATE", "k", "g3", "1002-0"),
        ("XREADGROUP", "GROUP", "g1", "alice", "COUNT", "3", "STREAMS", "k", ">"),
        ("XREADGROUP", "GROUP", "g1", "bob", "COUNT", "2", "STREAMS", "k", ">"),
        ("XREADGROUP", "GROUP", "g3", "carol", "COUNT", "4", "STREAMS", "k", ">"),
        ("XACK", "k", "g1", "1000-1"),
        ("XCLAIM", "k", "g1", "bob", "0", "1000-2"),
        ("XGROUP", "CREATECONSUMER", "k", "g2", "dave"),
        ("CONFIG", "SET", "stream-node-max-entries", "100"),
    ]
    stream_groups = case("stream_groups", "stream", groups, extra=["XPENDING k g1", "XPENDING k g3"])
    case(
        "stream_trimmed",
        "stream",
        [("XADD", "k", "%d-0" % i, "f", str(i)) for i in range(1, 300)] + [("XTRIM", "k", "MAXLEN", "=", "150"), ("XDEL", "k", "200-0")],
        extra=["XRANGE k 149 152"],
    )
    case("stream_empty_with_group", "stream", [("XGROUP", "CREATE", "k", "g", "$", "MKSTREAM")])
    case("stream_all_deleted", "stream", [("XADD", "k", "7-1", "a", "1"), ("XDEL", "k", "7-1")])
    case("stream_setid", "stream", [("XADD", "k", "3-0", "a", "1"), ("XSETID", "k", "10-5", "ENTRIESADDED", "42", "MAXDELETEDID", "9-0")])

    # Older RDB types, built here.
    record("legacy_list", payload(b"\x01" + rlen(4) + rstr("a") + rstr("") + b"\xc0\x05" + rstr("x" * 70)), reads("list"))
    record(
        "legacy_zset",
        payload(b"\x03" + rlen(4) + rstr("a") + b"\x031.5" + rstr("b") + b"\xfe" + rstr("c") + b"\xff" + rstr("d") + b"\x02-3"),
        reads("zset"),
    )
    record("legacy_zset_nan", payload(b"\x03" + rlen(1) + rstr("a") + b"\xfd"), [])
    record("legacy_hash_zipmap", payload(b"\x09" + rstr(zipmap([("f1", "v1", 0), ("num", "12", 2), ("empty", "", 1)]))), reads("hash", ["HGETALL k"]))
    record("legacy_hash_zipmap_long", payload(b"\x09" + rstr(zipmap([("f", "v" * 300, 0)]))), reads("hash", ["HGETALL k"]))
    zl_values = ["a", 0, 12, 13, -1, 127, -128, 300, -30000, 1 << 20, -(1 << 23), 1 << 30, 1 << 40, -(1 << 62), "x" * 100, "", "hello"]
    record("legacy_list_ziplist", payload(b"\x0a" + rstr(ziplist(zl_values))), reads("list"))
    record("legacy_zset_ziplist", payload(b"\x0c" + rstr(ziplist(["a", 1, "b", "2.5", "c", 300, "d", "inf"]))), reads("zset"))
    record("legacy_hash_ziplist", payload(b"\x0d" + rstr(ziplist(["f1", "v1", "n", 7, "long", "y" * 80]))), reads("hash", ["HGETALL k"]))
    record(
        "legacy_list_quicklist",
        payload(b"\x0e" + rlen(3) + rstr(ziplist(["a", 1, "b"])) + rstr(ziplist([])) + rstr(ziplist(["c", -5]))),
        reads("list"),
    )
    record("legacy_stream", stream_v1(stream_groups), reads("stream", ["XPENDING k g1", "XPENDING k g3"]))
    record("legacy_stream_empty", stream_v1(c_dump_empty_stream(c)), reads("stream"))

    # Payloads redis-server refuses: empty values, repeated members, a checksum that
    # does not hold, a newer RDB version.
    record("refused_empty_set", payload(b"\x02\x00"), [])
    record("refused_empty_intset", payload(b"\x0b" + rstr((2).to_bytes(4, "little") + (0).to_bytes(4, "little"))), [])
    record("refused_empty_listpack_hash", payload(b"\x10" + rstr(b"\x07\x00\x00\x00\x00\x00\xff")), [])
    record("refused_empty_list", payload(b"\x12\x01\x02" + rstr(b"\x07\x00\x00\x00\x00\x00\xff")), [])
    record("refused_duplicate_set", payload(b"\x02\x02" + rstr("a") + rstr("a")), [])
    record("refused_duplicate_zset", payload(b"\x05\x02" + rstr("a") + b"\x00" * 8 + rstr("a") + b"\x00" * 8), [])
    record("refused_duplicate_hash_table", payload(b"\x04" + rlen(200) + b"".join(rstr("f") + rstr("v") for _ in range(200))), [])
    record("refused_unknown_type", payload(b"\x63\x00"), [])
    record("refused_stream_node_key", payload(b"\x13\x01" + rstr("short") + rstr(b"\x07\x00\x00\x00\x00\x00\xff")), [])
    good = payload(b"\x00" + rstr("hello"))
    record("refused_checksum", good[:-1] + bytes([good[-1] ^ 1]), [])
    b = b"\x00" + rstr("hello") + (11).to_bytes(2, "little")
    record("refused_version", b + crc64(b).to_bytes(8, "little"), [])
    b = b"\x00" + rstr("hello") + (9).to_bytes(2, "little")
    record("older_version", b + crc64(b).to_bytes(8, "little"), reads("string"))
    # Redis reads the object from the whole payload: a string running into the footer
    # takes its bytes, and bytes after the object are ignored.
    record("string_into_footer", payload(b"\x00\x05hel"), ["STRLEN k"])
    record("trailing_bytes", payload(b"\x00" + rstr("hello") + b"junk"), reads("string"))
    c.send("FLUSHALL")


def c_dump_empty_stream(c):
    c.send("FLUSHALL")
    c.send("XADD", "k", "5-0", "a", "1")
    c.send("XDEL", "k", "5-0")
    return c.bulk("DUMP", "k")


DEFAULTS = {"list-compress-depth": "0", "stream-node-max-entries": "100"}

if __name__ == "__main__":
    main()
