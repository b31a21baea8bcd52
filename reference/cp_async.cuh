// cp.async's group bookkeeping (sm_80+), shared by the sources that stage through it.
static __device__ __forceinline__ void cp_async_commit() {
    asm volatile("cp.async.commit_group;");
}

// Waits for every committed group of this thread's copies; a compiler memory barrier, so no
// shared-memory access moves across it.
static __device__ __forceinline__ void cp_async_wait_all() {
    asm volatile("cp.async.wait_group 0;" ::: "memory");
}
