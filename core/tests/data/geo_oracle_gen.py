#!/usr/bin/env python3
"""Records the GEO replay corpus (core/tests/geo_oracle.rs) from a redis-server 7.0.15 on
localhost:7391 (start one with: redis-server --port 7391 --save "" --appendonly no).
usage: geo_oracle_gen.py SEED SCENARIOS OUT   (data/geo_oracle.txt: SEED 7, 60 scenarios)"""
import socket, sys, random
def enc(args):
    out = b"*%d\r\n" % len(args)
    for a in args:
        if isinstance(a, str): a = a.encode()
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    return out
class Conn:
    def __init__(self, port=7391):
        self.s = socket.create_connection(("127.0.0.1", port)); self.buf = b""
    def _line(self):
        while b"\r\n" not in self.buf: self.buf += self.s.recv(65536)
        l, self.buf = self.buf.split(b"\r\n", 1); return l
    def _n(self, n):
        while len(self.buf) < n: self.buf += self.s.recv(65536)
        d, self.buf = self.buf[:n], self.buf[n:]; return d
    def read(self):
        l = self._line(); t = l[:1]; out = l + b"\r\n"
        if t in b"$=!":
            n = int(l[1:])
            if n >= 0: out += self._n(n + 2)
        elif t in b"*~>%|":
            n = int(l[1:])
            if t in b"%|": n *= 2
            for _ in range(max(n, 0)): out += self.read()
        return out
    def cmd(self, *args):
        self.s.sendall(enc(args)); return self.read()
LATMAX = 85.05112878
def esc(b):
    return b.decode("latin1").replace("\\", "\\\\").replace("\r", "\\r").replace("\n", "\\n")

def fmt(x):
    r = random.random()
    if r < 0.5: return "%.6f" % x
    if r < 0.8: return repr(x)
    return "%.3f" % x

def clamp(v, lo, hi): return max(lo, min(hi, v))

def centre():
    r = random.random()
    if r < 0.15: return (random.choice([-180, 180, 179.9999, -179.9999]), random.uniform(-80, 80))
    if r < 0.3: return (random.uniform(-180, 180), random.choice([LATMAX, -LATMAX, 85, -85, 84.9, 81, -81, 66.5, -66.5, 79.9]))
    if r < 0.4: return (random.uniform(-1, 1), random.uniform(-1, 1))
    return (random.uniform(-180, 180), random.uniform(-LATMAX, LATMAX))

def spread_deg():
    return 10 ** random.uniform(-6, 1.5)

def radius():
    r = random.random()
    if r < 0.03: return "0"
    if r < 0.05: return "inf"
    m = 10 ** random.uniform(-1, 7.3)
    unit = random.choice(["m", "km", "ft", "mi", "KM", "M"])
    conv = {"m": 1, "km": 1000, "ft": 0.3048, "mi": 1609.34}[unit.lower()]
    v = m / conv
    return random.choice(["%.3f" % v, "%d" % max(1, round(v)), repr(v)]), unit

def main():
    seed, n, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    random.seed(seed)
    c = Conn()
    f = open(out, "w")
    def run(args, compare=True):
        rep = c.cmd(*args)
        f.write("> " + " ".join(args) + "\n")
        f.write(("< " + esc(rep) if compare else "<*") + "\n")
    for sc in range(n):
        f.write("# scenario %d\n" % sc)
        run(["FLUSHALL"])
        resp3 = random.random() < 0.2
        if resp3: run(["HELLO", "3"], compare=False)
        lon0, lat0 = centre()
        sp = spread_deg()
        npts = random.randint(1, 40) if random.random() < 0.85 else random.randint(100, 300)
        members = []
        pts = {}
        args = ["GEOADD", "k"]
        for i in range(npts):
            m = "m%d" % i
            if pts and random.random() < 0.05:
                lon, lat = random.choice(list(pts.values()))
            else:
                lon = lon0 + random.gauss(0, sp)
                if lon > 180: lon -= 360
                if lon < -180: lon += 360
                lat = clamp(lat0 + random.gauss(0, sp), -LATMAX, LATMAX)
            if random.random() < 0.03: lon = random.choice([180, -180])
            if random.random() < 0.03: lat = random.choice([LATMAX, -LATMAX])
            ls, as_ = fmt(lon), fmt(lat)
            pts[m] = (float(ls), float(as_))
            args += [ls, as_, m]
            members.append(m)
        run(args)
        for q in range(random.randint(5, 25)):
            kind = random.random()
            def mem(): return random.choice(members + ["nosuch"] if random.random() < 0.1 else members)
            def cpt():
                lon = clamp(lon0 + random.gauss(0, sp), -180, 180); lat = clamp(lat0 + random.gauss(0, sp), -LATMAX, LATMAX)
                return [fmt(lon), fmt(lat)]
            def opts(store_ok):
                o = []
                if random.random() < 0.3: o.append("WITHDIST")
                if random.random() < 0.3: o.append("WITHCOORD")
                if random.random() < 0.2: o.append("WITHHASH")
                r = random.random()
                if r < 0.25: o.append("ASC")
                elif r < 0.45: o.append("DESC")
                o = [[x] for x in o]
                if random.random() < 0.35:
                    o.append(["COUNT", str(random.randint(1, 12))])
                    if random.random() < 0.3: o.append(["ANY"])
                random.shuffle(o)
                return [x for g in o for x in g]
            def shape():
                if random.random() < 0.6:
                    rr = radius()
                    return ["BYRADIUS", rr] if isinstance(rr, str) else ["BYRADIUS", rr[0], rr[1]]
                rr = radius(); hh = radius()
                w = rr if isinstance(rr, str) else rr[0]
                h = hh if isinstance(hh, str) else hh[0]
                unit = random.choice(["m", "km", "ft", "mi"])
                return ["BYBOX", w, h, unit]
            def rad():
                rr = radius()
                return [rr, "km"] if isinstance(rr, str) else [rr[0], rr[1]]
            def fix_shape(s):
                return s if len(s) == (3 if s[0] == "BYRADIUS" else 4) else s + ["m"]
            if kind < 0.35:
                frm = ["FROMMEMBER", mem()] if random.random() < 0.4 else ["FROMLONLAT"] + cpt()
                run(["GEOSEARCH", "k"] + frm + fix_shape(shape()) + opts(False))
            elif kind < 0.5:
                frm = ["FROMMEMBER", mem()] if random.random() < 0.4 else ["FROMLONLAT"] + cpt()
                o = [x for x in opts(False) if not x.startswith("WITH")]
                if random.random() < 0.5: o.append("STOREDIST")
                run(["GEOSEARCHSTORE", "d"] + ["k"] + frm + fix_shape(shape()) + o)
                run(["ZRANGE", "d", "0", "-1", "WITHSCORES"])
            elif kind < 0.62:
                name = random.choice(["GEORADIUS", "GEORADIUS_RO"])
                run([name, "k"] + cpt() + rad() + opts(False))
            elif kind < 0.72:
                name = random.choice(["GEORADIUSBYMEMBER", "GEORADIUSBYMEMBER_RO"])
                run([name, "k", mem()] + rad() + opts(False))
            elif kind < 0.8:
                o = [x for x in opts(False) if not x.startswith("WITH")]
                o += [random.choice(["STORE", "STOREDIST"]), "d"]
                if random.random() < 0.5:
                    run(["GEORADIUS", "k"] + cpt() + rad() + o)
                else:
                    run(["GEORADIUSBYMEMBER", "k", mem()] + rad() + o)
                run(["ZRANGE", "d", "0", "-1", "WITHSCORES"])
            elif kind < 0.88:
                a = ["GEODIST", "k", mem(), mem()]
                if random.random() < 0.7: a.append(random.choice(["m", "km", "ft", "mi"]))
                run(a)
            elif kind < 0.94:
                run(["GEOPOS", "k"] + random.sample(members, min(len(members), 3)) + ["nosuch"])
            else:
                run(["GEOHASH", "k"] + random.sample(members, min(len(members), 3)) + ["nosuch"])
        if resp3: run(["HELLO", "2"], compare=False)
    f.close()
main()
