# One decode-step run of each build, Rust medians side by side: python3 step_ab.py OLD.jsonl NEW.jsonl
import json, sys
def load(f):
    return {(r['case'], r['arm']): r['rust_us'] for r in map(json.loads, open(f))
            if r.get('kind') == 'timing' and r.get('rust_us')}
old, new = load(sys.argv[1]), load(sys.argv[2])
print('| case | arm | Rust old us | Rust new us | new/old |')
print('|---|---|---|---|---|')
for k, v in old.items():
    if k in new:
        print(f'| {k[0]} | {k[1].strip()} | {v:.2f} | {new[k]:.2f} | {new[k] / v:.3f} |')
