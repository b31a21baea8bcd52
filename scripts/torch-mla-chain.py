#!/usr/bin/env python3
"""The MLA attention over gathered rows as a PyTorch user writes it, timed as the mla gate
times its arms: gather, bmm, softmax, bmm in f32 (no TF32), captured in a CUDA graph, the L2
scrubbed (a write of four times its size) before every replay, one replay per sample between two
events, median over the samples.

    scripts/torch-mla-chain.py [--geometry seed|v3.2] [--samples N]

Prints one line per (t_q, kv) cell: the chain's median us. A peer for `attn_flash`, run beside
the gate on the same GPU (the gate itself cannot reach torch).
"""

import argparse
import statistics

import torch


def cell(t_q, kv, nh, kv_rank, d_rope, n_slots, samples, scrub):
    gen = torch.Generator(device="cuda").manual_seed(t_q * 1_000_003 + kv)
    d = kv_rank + d_rope
    q = torch.rand(t_q, nh, d, device="cuda", generator=gen) * 2 - 1
    cache = torch.rand(kv, d, device="cuda", generator=gen) * 2 - 1
    idx = torch.randint(0, kv, (t_q, n_slots), device="cuda", generator=gen)
    scale = 1.0 / 23.323808

    def chain():
        rows = cache[idx]  # [t, n, d]
        scores = torch.bmm(q, rows.transpose(1, 2)) * scale  # [t, nh, n]
        p = torch.softmax(scores, dim=-1)
        return torch.bmm(p, rows[..., :kv_rank])  # [t, nh, kv_rank]

    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(3):
            chain()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        chain()
    times = []
    for _ in range(samples):
        scrub.add_(1.0)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e3)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--geometry", choices=["seed", "v3.2"], default="seed")
    ap.add_argument("--samples", type=int, default=50)
    args = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    nh, d_rope = (64, 0) if args.geometry == "seed" else (128, 64)
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    scrub = torch.zeros(l2, device="cuda")  # l2 floats: four times the L2, in bytes
    print(f"torch {torch.__version__} on {torch.cuda.get_device_name(0)}, geometry {args.geometry}: "
          f"gather + bmm + softmax + bmm (f32, CUDA graph, L2 scrubbed), median of {args.samples}")
    for kv in [2048, 32768, 131072, 262144]:
        for t_q in [1, 2, 4, 8]:
            us = cell(t_q, kv, nh, 512, d_rope, min(2048, kv), args.samples, scrub)
            print(f"t{t_q} kv{kv}  torch chain  {us:.2f} us")


if __name__ == "__main__":
    main()
