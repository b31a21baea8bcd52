# Per-kernel totals from Nsight Compute's per-instruction source page (sass-*.log.gz): duration,
# shared-load bank conflicts and wavefronts (details-*.log), stall samples by reason, instructions.
# usage: python3 stalls.py DIR
import csv, gzip, glob, os, re, sys
for sass in sorted(glob.glob(os.path.join(sys.argv[1], 'sass-*.log.gz'))):
    k = os.path.basename(sass)[5:-7]
    det = open(os.path.join(sys.argv[1], f'details-{k}.log')).read()
    get = lambda pat: re.search(pat + r'\s+([\d,.]+)', det).group(1)
    rows = list(csv.reader(gzip.open(sass, 'rt')))
    hdr, data = rows[1], rows[2:]
    ix = {h: i for i, h in enumerate(hdr)}
    cols = [h for h in hdr if h.startswith('stall_') and 'Not Issued' not in h]
    s = {c: sum(int(r[ix[c]] or 0) for r in data) for c in cols}
    ins = sum(int(r[ix['Instructions Executed']] or 0) for r in data)
    dur = get(r'Duration\s+us')
    print(f"{k}: {dur} us, shared-load bank conflicts "
          f"{get('l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum')}, shared-load wavefronts "
          f"{get('l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum')}, warp instructions {ins}, samples {sum(s.values())}")
    print('  ' + ', '.join(f'{c[6:]} {v}' for c, v in sorted(s.items(), key=lambda x: -x[1]) if v > 0))
