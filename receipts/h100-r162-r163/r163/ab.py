import json, collections, statistics as st, sys, math
# ab.py DIR PREFIX BUILDS ROUNDS [FILTER]: medians over rounds of PREFIX-<build>-<i>.jsonl, Rust and .cu, ratios to the first build.
R, prefix, builds, n = sys.argv[1], sys.argv[2], sys.argv[3].split(','), int(sys.argv[4])
filt = sys.argv[5] if len(sys.argv) > 5 else ''
rows = collections.defaultdict(lambda: collections.defaultdict(list))
cu = collections.defaultdict(lambda: collections.defaultdict(list))
for b in builds:
    for i in range(1, n + 1):
        try:
            f = open(f'{R}/{prefix}-{b}-{i}.jsonl')
        except OSError:
            continue
        for l in f:
            r = json.loads(l)
            if r.get('kind') != 'timing' or 'rust_us' not in r or 'cu_us' not in r or filt not in r['arm']:
                continue
            rows[(r['case'], r['arm'])][b].append(r['rust_us'])
            cu[(r['case'], r['arm'])][b].append(r['cu_us'])
b0 = builds[0]
print("| case | arm | " + " | ".join(f"Rust {b}" for b in builds) + " | " + " | ".join(f"{b}/{b0}" for b in builds[1:]) + " | .cu " + " / ".join(builds) + " |")
print("|" + "---|" * (3 + 2 * len(builds) - 1))
logs = collections.defaultdict(list)
for (c, a), v in rows.items():
    if any(not v[b] for b in builds):
        continue
    m = {b: st.median(v[b]) for b in builds}
    mc = {b: st.median(cu[(c, a)][b]) for b in builds}
    for b in builds[1:]:
        logs[(a.split()[0], b)].append(math.log(m[b] / m[b0]))
    print(f"| {c.split()[0]} | {a} | " + " | ".join(f"{m[b]:.2f}" for b in builds) + " | " + " | ".join(f"{m[b]/m[b0]:.3f}" for b in builds[1:]) + " | " + " / ".join(f"{mc[b]:.2f}" for b in builds) + " |")
print()
for k, v in sorted(logs.items()):
    print(f"geomean {k[0]} {k[1]}/{b0}: {math.exp(sum(v)/len(v)):.3f} over {len(v)}")
