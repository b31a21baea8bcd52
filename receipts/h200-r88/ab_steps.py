import json,statistics as st,collections,sys
# usage: ab_steps.py DIR: Rust means of decode-step-{b0,n1}-{1,2}.jsonl's medians, n1/b0
R=sys.argv[1]; d=collections.defaultdict(list)
for b in ['b0','n1']:
  for i in [1,2]:
    for l in open(f'{R}/decode-step-{b}-{i}.jsonl'):
      r=json.loads(l)
      if r.get('kind')=='timing' and r.get('rust_us'): d[(r['case'],r['arm'],b)].append(r['rust_us'])
print('| case | arm | Rust b0 | Rust n1 | n1/b0 |\n|---|---|---|---|---|')
for k in sorted(set(k[:2] for k in d)):
  a,b=d.get(k+('b0',)),d.get(k+('n1',))
  if a and b: print('| %s | %s | %.2f | %.2f | %.3f |'%(k[0],k[1],st.mean(a),st.mean(b),st.mean(b)/st.mean(a)))
