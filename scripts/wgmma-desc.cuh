// A wgmma shared-memory operand's descriptor, as the sm_90a scripts (wgmma-tf32-peak.cu,
// wgmma-bits.cu, mma-clock.cu) lay their operands out: no swizzle, core matrices of 8 rows x 16 bytes,
// K-major; `lbo` bytes between core matrices along K, `sbo` bytes between 8-row groups.
#pragma once
#include <cstdint>

__device__ __forceinline__ uint64_t desc(const void * smem, uint32_t lbo, uint32_t sbo) {
    const uint32_t a = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
    return (uint64_t) ((a >> 4) & 0x3fff) | (uint64_t) ((lbo >> 4) & 0x3fff) << 16 |
        (uint64_t) ((sbo >> 4) & 0x3fff) << 32;
}
