# every_m.py: every-m.txt from gemv.jsonl (uniform class): each format's Rust time and GB/s against
# its own m = 1, the peers, and Rust/.cu, over the shapes the run reached.
import json, math
t = [json.loads(l) for l in open('gemv.jsonl')]
t = [r for r in t if r.get('kind') == 'timing' and r['class'] == 'uniform']
fm = ['q8_0', 'q8_0 planar', 'e4m3', 'e4m3 b128']
cell = {(r['case'], r['arm']): r for r in t}
us = lambda r: r.get('rust_us', r.get('peer_us'))
cases = ['q_proj 5120->12288', 'k/v_proj 5120->1024', 'o_proj 6144->5120', 'gate/up_proj 5120->17408']
print("H100 (receipts/h100-r146-main/gemv.jsonl), uniform class. Rust us (GB/s as % of the same arm's m=1 GB/s) at m = 1..8; peers: cuBLAS bf16 / cuBLASLt e4m3 us.")
print("The gate stopped at its time limit before down_proj and square-ref; those shapes are not here.")
for c in cases:
    for f in fm:
        g1 = cell[(c, f + ' m=1')]['rust_gbps']
        print(f"{c:28s} {f:12s} " + "  ".join(f"{us(cell[(c, f + f' m={m}')]):.2f} ({100 * cell[(c, f + f' m={m}')]['rust_gbps'] / g1:.0f}%)" for m in range(1, 9)))
    print(f"{c:28s} {'peers':12s} " + "  ".join(f"{us(cell[(c, f'cublas bf16 gemm m={m}')]):.2f}/{us(cell[(c, f'cublaslt e4m3 gemm m={m}')]):.2f}" for m in range(1, 9)))
print()
for f in fm:
    v = [(c, 100 * cell[(c, f + ' m=8')]['rust_gbps'] / cell[(c, f + ' m=1')]['rust_gbps']) for c in cases if not c.startswith('k/v')]
    print(f"{f}: m=8 GB/s as % of m=1: " + ", ".join(f"{c.split()[0]} {p:.1f}%" for c, p in v))
for f in fm:
    nb = nl = tot = 0
    for c in cases:
        for m in range(1, 9):
            r = us(cell[(c, f + f' m={m}')]); b = us(cell[(c, f'cublas bf16 gemm m={m}')]); l = us(cell[(c, f'cublaslt e4m3 gemm m={m}')])
            tot += 1; nb += r < b; nl += r < l
    print(f"{f}: faster than cuBLAS bf16 in {nb} of {tot}, than cuBLASLt e4m3 in {nl} of {tot} (shape, m) cells")
for m in range(1, 9):
    xs = [cell[(c, f + f' m={m}')]['rust_over_cu'] for c in cases for f in fm]
    print(f"m={m}: Rust/.cu geomean {math.exp(sum(map(math.log, xs)) / len(xs)):.3f} over {len(xs)} (worst {max(xs):.3f})")
