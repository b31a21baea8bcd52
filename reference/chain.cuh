// chain_entry() without the trigger, for the kernels of kernels-gpu's TRIGGER_AT_EXIT: a dependent
// launches once every block of this one has exited. The wait keeps every read of the
// predecessor's output, and every write, after the predecessor grid has finished (a kernel
// launched plainly passes it at once).
static __device__ __forceinline__ void chain_wait() {
#if __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

// The trigger alone, kernels-gpu's chain_trigger: the GEMVs' entry, whose first weight copies,
// which no kernel before them in a step writes, go out before their chain_wait(), and the
// activation after it.
static __device__ __forceinline__ void chain_trigger() {
#if __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;");
#endif
}

// chain_trigger(), then chain_wait(): the first thing every other kernel of the chained families
// (all but read_stream) does, before any global memory access; kernels-gpu's chain_entry.
// Triggering at entry lets the stream's next kernel, where it is launched as a programmatic
// dependent, launch and place its blocks as soon as every block of this one has started. Below
// sm_90 both are nothing, and the host launches plainly.
static __device__ __forceinline__ void chain_entry() {
    chain_trigger();
    chain_wait();
}
