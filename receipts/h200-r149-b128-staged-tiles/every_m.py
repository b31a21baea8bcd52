# every_m.py JSONL [TITLE]: each format's Rust time and GB/s against its own m = 1 (uniform class),
# the peers, the cells faster than each peer, and Rust/.cu at each m, over the 27B shapes present.
import json, math, sys
t = [json.loads(l) for l in open(sys.argv[1])]
t = [r for r in t if r.get('kind') == 'timing' and r['class'] == 'uniform']
fm = ['q8_0', 'q8_0 planar', 'e4m3', 'e4m3 b128']
cell = {(r['case'], r['arm']): r for r in t}
us = lambda r: r.get('rust_us', r.get('peer_us'))
sheet = ['q_proj 5120->12288', 'k/v_proj 5120->1024', 'o_proj 6144->5120', 'gate/up_proj 5120->17408',
         'down_proj 17408->5120', 'square-ref 5120->5120']
cases = [c for c in sheet if (c, 'e4m3 m=8') in cell]
big = [c for c in cases if c.split()[0] in ('q_proj', 'o_proj', 'gate/up_proj', 'down_proj')]
print(f"{sys.argv[1]}, uniform class. Rust us (GB/s as % of the same arm's m=1 GB/s) at m = 1..8; peers: cuBLAS bf16 / cuBLASLt e4m3 us.")
for c in cases:
    for f in fm:
        g1 = cell[(c, f + ' m=1')]['rust_gbps']
        print(f"{c:28s} {f:12s} " + "  ".join(f"{us(cell[(c, f + f' m={m}')]):.2f} ({100 * cell[(c, f + f' m={m}')]['rust_gbps'] / g1:.0f}%)" for m in range(1, 9)))
    print(f"{c:28s} {'peers':12s} " + "  ".join(f"{us(cell[(c, f'cublas bf16 gemm m={m}')]):.2f}/{us(cell[(c, f'cublaslt e4m3 gemm m={m}')]):.2f}" for m in range(1, 9)))
print()
for f in fm:
    v = [(c, 100 * cell[(c, f + ' m=8')]['rust_gbps'] / cell[(c, f + ' m=1')]['rust_gbps']) for c in big]
    print(f"{f}: m=8 GB/s as % of m=1: " + ", ".join(f"{c.split()[0]} {p:.1f}%" for c, p in v))
for sel, name in ((cases, 'every shape'), ([c for c in cases if c.split()[0] in ('q_proj', 'k/v_proj', 'o_proj', 'gate/up_proj')], 'q_proj, k/v, o_proj, gate/up')):
    for f in fm:
        nb = nl = tot = 0
        for c in sel:
            for m in range(1, 9):
                r = us(cell[(c, f + f' m={m}')]); b = us(cell[(c, f'cublas bf16 gemm m={m}')]); l = us(cell[(c, f'cublaslt e4m3 gemm m={m}')])
                tot += 1; nb += r < b; nl += r < l
        print(f"{name}: {f}: faster than cuBLAS bf16 in {nb} of {tot}, than cuBLASLt e4m3 in {nl} of {tot} (shape, m) cells")
for m in range(1, 9):
    xs = [cell[(c, f + f' m={m}')]['rust_over_cu'] for c in cases for f in fm]
    print(f"m={m}: Rust/.cu geomean {math.exp(sum(map(math.log, xs)) / len(xs)):.3f} over {len(xs)} (worst {max(xs):.3f})")
