"""Each format's weight bytes over its time (TB/s) at m = 1, 2, 4 and 8, per shape, from
every-m.txt (the Rust build, uniform): usage `python3 rates.py every-m.txt`."""
import re
import sys

BYTES_PER_WEIGHT = {"q8_0": 34 / 32, "q8_0 planar": 34 / 32, "e4m3": 1.0, "e4m3 b128": 1.0}
ROW = re.compile(r"(\S+) (\d+)->(\d+)\s+(q8_0 planar|q8_0|e4m3 b128|e4m3)\s+(.*)")

print("shape          format       16-row tiles   TB/s at m = 1     2     4     8")
for line in open(sys.argv[1]):
    m = ROW.match(line)
    if not m:
        continue
    in_f, out_f, fmt = int(m.group(2)), int(m.group(3)), m.group(4)
    us = [float(u) for u in re.findall(r"([\d.]+) \(", m.group(5))]
    w = in_f * out_f * BYTES_PER_WEIGHT[fmt]
    rates = " ".join(f"{w / us[k] / 1e6:5.2f}" for k in (0, 1, 3, 7))
    print(f"{m.group(1):14s} {fmt:12s} {out_f // 16:5d}                  {rates}")
