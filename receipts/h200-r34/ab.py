#!/usr/bin/env python3
"""Rust (and .cu) time of the new build over the old, per arm, from two gates' JSONL of one call:
ab.py OLD.jsonl NEW.jsonl. Arms are matched by case and arm name; geomean, min and max."""
import json, math, sys
from collections import defaultdict


def load(path):
    rows = {}
    for line in open(path):
        r = json.loads(line)
        if r.get("kind") == "timing" and "rust_us" in r:
            rows[(r["case"], r["arm"])] = r
    return rows


old, new = load(sys.argv[1]), load(sys.argv[2])
for side in ("rust_us", "cu_us"):
    by_arm = defaultdict(list)
    for key, r in new.items():
        if key in old and r.get(side) and old[key].get(side):
            by_arm[key[1]].append(r[side] / old[key][side])
    every = [v for vs in by_arm.values() for v in vs]
    if not every:
        continue
    geo = lambda vs: math.exp(sum(map(math.log, vs)) / len(vs))
    print(f"{side}: new/old over {len(every)} cells: geomean {geo(every):.3f}, "
          f"{min(every):.3f} to {max(every):.3f}")
    for arm in sorted(by_arm):
        vs = by_arm[arm]
        print(f"  {arm:28s} n={len(vs):3d} geomean {geo(vs):.3f}  {min(vs):.3f} to {max(vs):.3f}")
