import json, sys, glob, statistics as st
pre = sys.argv[1]; builds = sys.argv[2:4]; filt = sys.argv[4] if len(sys.argv) > 4 else ''
data = {}
for b in builds:
    for f in sorted(glob.glob(f'{pre}-{b}-*.jsonl')):
        for l in open(f):
            d = json.loads(l)
            if d.get('kind') == 'timing':
                data.setdefault((d['shape']['name'], d['arm']), {}).setdefault(b, []).append((d['rust_us'], d.get('cu_us', float('nan'))))
print(f"{'shape':10} {'arm':22} " + ' '.join(f'{b+" rust":>16}' for b in builds) + '  new/old   rust/cu(' + builds[1] + ')')
rs = []
for (s, a), v in sorted(data.items()):
    if filt not in a: continue
    if len(v) < 2: continue
    o = [x[0] for x in v[builds[0]]]; n = [x[0] for x in v[builds[1]]]
    r = st.median(n) / st.median(o); rs.append(r)
    rc = st.median([x[0]/x[1] for x in v[builds[1]]])
    print(f"{s:10} {a:22} " + ' '.join(f"{min(x):7.2f}-{max(x):7.2f}" for x in (o, n)) + f"  {r:6.3f}   {rc:6.3f}")
import math
print('geomean', math.exp(sum(map(math.log, rs))/len(rs)))
