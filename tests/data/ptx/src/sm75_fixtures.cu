// sm_75 instructions for the PTX interpreter's tests (tests/test_sim_mma_f16_k8.py): the Turing tensor-core form
// mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32. Built for compute_75 by tests/data/ptx/build_fixtures.py.

// One warp: D[16][8] = A[16][8] . B[8][8] + C[16][8] (row-major; A and B as fp16 bit patterns) through one
// mma.sync m16n8k8 of .f16 operands, fragments per the ISA: each .b32 register holds two elements, the lower
// index in the low half; a0 = A[g][2t, 2t+1], a1 = A[g+8][2t, 2t+1], b0 = B[2t, 2t+1][g].
extern "C" __global__ void k_mma_f16_k8(float* d, const unsigned short* a, const unsigned short* b, const float* c)
{
    const int lane = threadIdx.x, g = lane >> 2, t = lane & 3;
    auto pa = [&](int r, int k) { return (unsigned)a[r * 8 + k] | ((unsigned)a[r * 8 + k + 1] << 16); };
    const unsigned a0 = pa(g, 2 * t), a1 = pa(g + 8, 2 * t);
    const unsigned b0 = (unsigned)b[2 * t * 8 + g] | ((unsigned)b[(2 * t + 1) * 8 + g] << 16);
    float acc[4] = {c[g * 8 + 2 * t], c[g * 8 + 2 * t + 1], c[(g + 8) * 8 + 2 * t], c[(g + 8) * 8 + 2 * t + 1]};
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%0,%1,%2,%3};"
                 : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3])
                 : "r"(a0), "r"(a1), "r"(b0));
    d[g * 8 + 2 * t] = acc[0];
    d[g * 8 + 2 * t + 1] = acc[1];
    d[(g + 8) * 8 + 2 * t] = acc[2];
    d[(g + 8) * 8 + 2 * t + 1] = acc[3];
}
