"""r69: the decode-step arms of the build before (base) and after (new) swiglu_q8_1, two rounds of
each build alternated in one call: the mean of the two rounds' medians per arm and build, and
new/base. Usage: python3 ab.py [ARM_SUBSTRING]"""
import json
import sys
from collections import defaultdict

want = sys.argv[1] if len(sys.argv) > 1 else ""
t = defaultdict(list)
for b in ("base", "new"):
    for i in (1, 2):
        for line in open(f"decode-step-{b}-{i}.jsonl"):
            r = json.loads(line)
            if r.get("kind") == "timing" and want in r["arm"]:
                for side in ("rust", "cu"):
                    t[(r["case"], r["arm"], b, side)].append(r[f"{side}_us"])
cases = sorted({(c, a) for c, a, _, _ in t}, key=lambda x: (x[0].split()[0], int(x[0].split("=")[1]), x[1]))
print(f"{'case':18} {'arm':28} {'base rust':>9} {'new rust':>9} {'new/base':>8}   {'base cu':>8} {'new cu':>8} {'new/base':>8}")
for c, a in cases:
    row = []
    for side in ("rust", "cu"):
        b = t.get((c, a, "base", side))
        n = t.get((c, a, "new", side))
        mb = sum(b) / len(b) if b else None
        mn = sum(n) / len(n) if n else None
        row.append((mb, mn))
    f = lambda v: f"{v:9.2f}" if v is not None else f"{'-':>9}"
    r = lambda p: f"{p[1] / p[0]:8.3f}" if p[0] and p[1] else f"{'-':>8}"
    print(f"{c:18} {a:28} {f(row[0][0])} {f(row[0][1])} {r(row[0])}   {f(row[1][0])} {f(row[1][1])} {r(row[1])}")
