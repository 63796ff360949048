#!/usr/bin/env python3
"""Records lcs_redis_7_0_15.tsv: random LCS cases and the raw RESP replies of a running
redis-server 7.0.15 (its data is flushed).

    redis-server --port 7392 --save '' --appendonly no --daemonize yes
    python3 lcs_redis_7_0_15.py [port [seed [max_len [cases]]]] > lcs_redis_7_0_15.tsv

The defaults (7392 70015 24 400) write the committed file. A larger set, e.g.
`7392 1 150 3000 > /tmp/big.tsv`, runs with
`MEMORIA_LCS_CASES=/tmp/big.tsv cargo test -p memoria-core --test cmd_lcs`.
"""
import random
import socket
import sys


class Conn:
    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port))
        self.buf = b""

    def _fill(self, pred):
        while not pred():
            chunk = self.s.recv(1 << 20)
            if not chunk:
                raise EOFError
            self.buf += chunk

    def _line(self):
        self._fill(lambda: b"\r\n" in self.buf)
        i = self.buf.index(b"\r\n") + 2
        line, self.buf = self.buf[:i], self.buf[i:]
        return line

    def _take(self, n):
        self._fill(lambda: len(self.buf) >= n)
        data, self.buf = self.buf[:n], self.buf[n:]
        return data

    def read(self):
        """One reply, as the exact bytes the server sent."""
        line = self._line()
        kind, n = line[:1], line[1:-2]
        if kind in b"$=" and int(n) >= 0:
            return line + self._take(int(n) + 2)
        if kind in b"*%~>" and int(n) >= 0:
            count = int(n) * (2 if kind == b"%" else 1)
            return line + b"".join(self.read() for _ in range(count))
        return line

    def cmd(self, *args):
        out = b"*%d\r\n" % len(args)
        for a in args:
            a = a.encode() if isinstance(a, str) else a
            out += b"$%d\r\n%s\r\n" % (len(a), a)
        self.s.sendall(out)
        return self.read()


def main():
    argv = sys.argv[1:] + [None] * 4
    port = int(argv[0] or 7392)
    seed = int(argv[1] or 70015)
    random.seed(seed)
    max_len = int(argv[2] or 24)
    cases = int(argv[3] or 400)
    r = Conn(port)
    r.cmd("FLUSHALL")

    def rstr():
        short = random.random() < 0.2
        alpha = random.choice([b"ab", b"abc", b"acgt", b"abcdefgh"])
        n = random.randint(0, 6) if short else random.randint(0, max_len)
        return bytes(random.choice(alpha) for _ in range(n))

    def mutate(s):
        s = bytearray(s)
        for _ in range(random.randint(0, 6)):
            op = random.random()
            if op < 0.4 and s:
                del s[random.randrange(len(s))]
            elif op < 0.8:
                s.insert(random.randint(0, len(s)), random.choice(b"abcxyz"))
            elif s:
                s[random.randrange(len(s))] = random.choice(b"abxz")
        return bytes(s)

    def ropts():
        opts = []
        c = random.random()
        if c < 0.6:
            opts.append("IDX")
            if random.random() < 0.5:
                opts.append("WITHMATCHLEN")
            if random.random() < 0.5:
                opts += ["MINMATCHLEN", str(random.choice([-3, 0, 1, 2, 3, 4, 6]))]
        elif c < 0.75:
            opts.append("LEN")
            if random.random() < 0.3:
                opts += ["MINMATCHLEN", "2"]
        elif c < 0.9:
            if random.random() < 0.3:
                opts.append("WITHMATCHLEN")
        else:
            opts = random.choice([["LEN", "IDX"], ["IDX", "bogus"], ["MINMATCHLEN"], ["IDX", "MINMATCHLEN", "x"], ["len", "idx"]])
        if c >= 0.9 and random.random() < 0.2:
            random.shuffle(opts)
        if random.random() < 0.3:
            opts = [o.lower() for o in opts]
        return opts

    print("# LCS replies recorded from redis-server 7.0.15 (raw RESP, CRLF written as |) by")
    print(f"# lcs_redis_7_0_15.py (seed {seed}, strings up to {max_len} bytes). Columns: protocol,")
    print('# value of a, value of b ("-": empty), options after LCS a b (comma-separated, "-": none), reply.')
    for _ in range(cases):
        a = rstr()
        b = mutate(a) if random.random() < 0.5 else rstr()
        resp = 3 if random.random() < 0.3 else 2
        r.cmd("HELLO", str(resp))
        r.cmd("SET", "a", a)
        r.cmd("SET", "b", b)
        opts = ropts()
        reply = r.cmd("LCS", "a", "b", *opts).decode()
        assert "|" not in reply and "\t" not in reply
        print("\t".join([str(resp), a.decode() or "-", b.decode() or "-", ",".join(opts) or "-", reply.replace("\r\n", "|")]))


if __name__ == "__main__":
    main()
