// What the GPU scripts share: the error check (all three), and a launch's best time of five,
// after one warm-up, by events (the two peak programs, mma-tf32-peak.cu and wgmma-tf32-peak.cu).
#pragma once
#include <cstdio>

#define CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    printf("%s: %s\n", #x, cudaGetErrorString(e)); return 1; } } while (0)

template <typename L>
static float best_ms(const L launch) {
    cudaEvent_t start, stop;
    cudaEventCreate(&start);
    cudaEventCreate(&stop);
    float best = 1e30f;
    for (int r = 0; r < 6; ++r) {
        cudaEventRecord(start);
        launch();
        cudaEventRecord(stop);
        cudaEventSynchronize(stop);
        float ms;
        cudaEventElapsedTime(&ms, start, stop);
        if (r > 0 && ms < best) best = ms;
    }
    return best;
}
