# NVRTC PTX of a reference source with the host's options, its local includes given as headers.
import ctypes, os, re, sys
src, arch, out = sys.argv[1:4]
lib = ctypes.CDLL(os.path.expanduser('~/.local/lib/python3.11/site-packages/nvidia/cu13/lib/libnvrtc.so.13'))
root = os.path.dirname(src)
def inline(path, seen):
    text = open(path).read()
    def rep(m):
        p = os.path.join(root, m.group(1))
        if p in seen: return ''
        seen.add(p); return inline(p, seen)
    return re.sub(r'#include "([^"]+)"', rep, text)
text = inline(src, set()).encode()
prog = ctypes.c_void_p()
assert lib.nvrtcCreateProgram(ctypes.byref(prog), text, os.path.basename(src).encode(), 0, None, None) == 0
opts = [f'--gpu-architecture={arch.replace("sm_", "compute_")}', '--fmad=true', '--prec-div=true', '--prec-sqrt=true', '--ftz=false']
arr = (ctypes.c_char_p * len(opts))(*[o.encode() for o in opts])
rc = lib.nvrtcCompileProgram(prog, len(opts), arr)
n = ctypes.c_size_t(); lib.nvrtcGetProgramLogSize(prog, ctypes.byref(n)); log = ctypes.create_string_buffer(n.value); lib.nvrtcGetProgramLog(prog, log)
if rc != 0: sys.exit(log.value.decode())
lib.nvrtcGetPTXSize(prog, ctypes.byref(n)); buf = ctypes.create_string_buffer(n.value); lib.nvrtcGetPTX(prog, buf)
open(out, 'w').write(buf.value.decode())
