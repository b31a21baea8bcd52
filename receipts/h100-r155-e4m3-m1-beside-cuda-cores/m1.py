import json, statistics as st, sys, glob, collections
# m1.py DIR: each (shape, arm) at m = 1 timed by both gates, old (the CUDA-core e4m3 kernels) and
# h40 (main): Rust and .cu medians over the rounds, h40/old.
R = sys.argv[1] if len(sys.argv) > 1 else '.'
t = collections.defaultdict(lambda: collections.defaultdict(list))
for b in ('old', 'h40'):
    for f in sorted(glob.glob(f'{R}/m1-{b}-*.jsonl')):
        for l in open(f):
            r = json.loads(l)
            if r.get('kind') != 'timing' or r.get('m', 1) != 1:
                continue
            arm = r['arm'].replace('q8_0 planar', 'q8_0-planar')
            t[(r['case'], arm)][b].append((r['rust_us'], r.get('cu_us')))
print('| shape | arm | Rust old | Rust h40 | h40/old | .cu old | .cu h40 | h40/old |')
print('|---|---|---|---|---|---|---|---|')
for (c, a), v in sorted(t.items()):
    if not v['old'] or not v['h40']:
        continue
    ro, rn = (st.median(x[0] for x in v[b]) for b in ('old', 'h40'))
    cu = [[x[1] for x in v[b] if x[1] is not None] for b in ('old', 'h40')]
    co, cn = (st.median(x) if x else float('nan') for x in cu)
    print(f'| {c} | {a} | {ro:.2f} | {rn:.2f} | {rn/ro:.3f} | {co:.2f} | {cn:.2f} | {cn/co:.3f} |')
