# A 64-head entry's stall samples by phase, from ncu-h64-sass.log.xz in the current folder (one
# row a SASS instruction, in address order).
# Usage: python3 phases.py [WAIT SCORES SOFTMAX WEIGHTED PRODUCER]
# The five 0-based data rows where the phases after the prologue begin; this receipt's defaults,
# found from the instructions at them:
#   101  the consumers' first SYNCS.PHASECHK.TRYWAIT (the first stage's wait; rows 101-102)
#   103  the scores
#   915  the first BAR.SYNC after the scores' last HGMMA (the softmax's exchange of scores)
#   1917 the BAR.SYNC after the softmax's stores and fence (the weighted sum begins)
#   2786 the row after the consumers' EXIT (the producer warpgroup's code follows)
import csv, lzma, collections, sys
rows = list(csv.reader(lzma.open('ncu-h64-sass.log.xz', 'rt')))
hdr, data = rows[1], rows[2:]
ix = {h: i for i, h in enumerate(hdr)}
stalls = [h for h in hdr if h.startswith('stall_') and 'Not Issued' not in h]
cuts = [int(a) for a in sys.argv[1:]] or [101, 103, 915, 1917, 2786]
names = ['prologue', 'first stage wait', 'scores', 'softmax', 'weighted sum', 'producer']
edges = [0] + cuts + [len(data)]
phases = [(name, edges[i], edges[i + 1]) for i, name in enumerate(names)]
total = consumers = 0
out = []
for name, a, b in phases:
    n = sum(int(r[ix['Warp Stall Sampling (All Samples)']] or 0) for r in data[a:b])
    why = collections.Counter()
    for r in data[a:b]:
        for h in stalls:
            why[h[6:]] += int(r[ix[h]] or 0)
    out.append((name, n, why.most_common(4)))
    total += n
    consumers += n if name != 'producer' else 0
for name, n, why in out:
    share = f"{100 * n / consumers:5.1f}% of the consumers'" if name != 'producer' else '      -'
    print(f"{name:17s} {n:5d} {100 * n / total:5.1f}% of all, {share}  {why}")
print('samples', total, 'consumers', consumers)
