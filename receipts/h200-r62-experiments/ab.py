import json, glob, statistics as st, sys
pre=sys.argv[1]; A,B=sys.argv[2],sys.argv[3]
data={}
for f in sorted(glob.glob(f'{pre}-*.jsonl')):
    b=f.split('-')[-2]
    for l in open(f):
        d=json.loads(l)
        if d.get('kind')=='timing' and 'rust_us' in d:
            data.setdefault((d['case'],d['arm']),{}).setdefault(b,[]).append((d['rust_us'],d.get('cu_us',float('nan'))))
print(f"{'case':16} {'arm':24} {A+' cu':>8} {B+' cu':>8} {'cu B/A':>7} {A+' rs':>8} {B+' rs':>8} {'rs B/A':>6}")
for (c,a),v in data.items():
    if len(sys.argv)>4 and not any(s in a for s in sys.argv[4].split(',')): continue
    if A not in v or B not in v: continue
    ac=st.median([x[1] for x in v[A]]); bc=st.median([x[1] for x in v[B]])
    ar=st.median([x[0] for x in v[A]]); br=st.median([x[0] for x in v[B]])
    print(f"{c:16} {a:24} {ac:8.2f} {bc:8.2f} {bc/ac:7.3f} {ar:8.2f} {br:8.2f} {br/ar:6.3f}")
