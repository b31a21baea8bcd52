"""Least-squares line of time against bytes for each format and m over the probe's shapes with one
in_f (6144 by default): the slope as TB/s (the rate a launch streams at) and the intercept in us
(what a launch costs beyond its bytes), then each shape's residual. Usage: fit.py tiles.log [in_f]"""
import re
import sys

IN_F = sys.argv[2] if len(sys.argv) > 2 else "6144"
rows = {}
for line in open(sys.argv[1]):
    m = re.match(r"(\d+)->(\d+)\s+(q8_0 planar|q8_0|e4m3 b128|e4m3)\s+(.*)", line)
    if not m:
        continue
    cells = re.findall(r"([\d.]+) (\d+) (\d+)%", m.group(4))
    if len(cells) != 4:
        continue
    for i, (us, gbs, _) in enumerate(cells):
        # us x GB/s / 1e3 = MB moved
        rows.setdefault((m.group(3), [1, 2, 4, 8][i], m.group(1)), []).append(
            (int(m.group(2)), float(us), float(us) * float(gbs) / 1e3))


def fit(pts):
    n = len(pts)
    mb = sum(p[2] for p in pts) / n
    mt = sum(p[1] for p in pts) / n
    s = sum((p[2] - mb) * (p[1] - mt) for p in pts) / sum((p[2] - mb) ** 2 for p in pts)
    return s, mt - s * mb


FORMATS = ["q8_0", "q8_0 planar", "e4m3", "e4m3 b128"]
print(f"time = bytes / slope + intercept over in_f {IN_F}")
for fmt in FORMATS:
    for m in [1, 2, 4, 8]:
        s, c = fit(rows[(fmt, m, IN_F)])
        print(f"{fmt:12s} m={m}  slope {1 / s:.2f} TB/s  intercept {c:.2f} us")
print("\nresiduals (us), by out_f")
for fmt in FORMATS:
    for m in [1, 8]:
        pts = sorted(rows[(fmt, m, IN_F)])
        s, c = fit(pts)
        cells = "  ".join(f"{p[0]}: {p[1] - s * p[2] - c:+.2f}" for p in pts)
        print(f"{fmt:12s} m={m}  {cells}")
