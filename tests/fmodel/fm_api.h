/*
 * The functional model's runtime interface: what the model versions of the device headers
 * (tests/fmodel/shim/device/) call. Every call carries the source site of the kernel line
 * that made it (FM_SITE: GCC's __builtin_FILE/__builtin_LINE as default arguments, evaluated at
 * the caller), so that hazards, deadlocks and traps name the kernel line.
 *
 * Addresses are the kernel's own 32-bit shared-window addresses: the shared::cta address of a
 * byte of CTA rank r is (r << 24) | offset, offset counted from the start of the CTA's window
 * whose first 1 KiB is reserved (dynamic shared memory starts at 0x400). A shared::cta address
 * is also the shared::cluster address of the same byte (PTX ISA: the shared::cta window lies
 * inside the shared::cluster window), which is why the rank lives in the address.
 */
#ifndef JITGEMM_FMODEL_API_H
#define JITGEMM_FMODEL_API_H

#include <stdint.h>

#define FM_SITE_PARAMS const char *fm_file = __builtin_FILE(), int fm_line = __builtin_LINE()
#define FM_SITE_ARGS fm_file, fm_line

namespace fm {

struct dim3_t {
    unsigned x, y, z;
};
dim3_t thread_idx();
dim3_t block_idx();
dim3_t grid_dim();
dim3_t block_dim();

/* A possible switch to another warp (seeded). */
void maybe_yield(const char *file, int line);
[[noreturn]] void trap(const char *file, int line);

unsigned char *dynamic_smem();
uint32_t smem_addr(const void *p, const char *file, int line);

/* TMA */
void tma_load(int cta_group, uint32_t dst, const void *tmap, int rank, const int *coords,
              uint32_t bar, uint16_t mask, bool multicast, const char *file, int line);
void tma_store(const void *tmap, uint32_t src, int c0, int c1, const char *file, int line);
void bulk_commit(const char *file, int line);
void bulk_wait(int pending, bool read, const char *file, int line);
void fence_proxy_async(const char *file, int line);
void st_shared_v4(uint32_t addr, const uint32_t v[4], const char *file, int line);
void st_shared_b32(uint32_t addr, uint32_t v, const char *file, int line);
uint32_t ld_shared_b32(uint32_t addr, const char *file, int line);

/* tcgen05 */
void tmem_alloc(int cta_group, int cols, bool exclusive, uint32_t dst, const char *file, int line);
void tmem_relinquish(int cta_group, const char *file, int line);
void tmem_dealloc(int cta_group, uint32_t taddr, int cols, bool exclusive, const char *file,
                  int line);
void utccp(int cta_group, uint32_t taddr, uint64_t sdesc, const char *file, int line);
void mma(int cta_group, int kind, int sf_vec, int collector, uint32_t d, uint64_t adesc,
         uint64_t bdesc, uint32_t idesc, uint32_t sfa, uint32_t sfb, uint32_t accumulate,
         const char *file, int line);
void commit(int cta_group, uint32_t bar, uint16_t mask, bool multicast, const char *file, int line);
void tcgen05_fence(const char *file, int line);
void tmem_ld16(uint32_t taddr, uint32_t r[16], const char *file, int line);
void tmem_wait_ld(const char *file, int line);

/* mbarriers */
void mbar_init(uint32_t bar, uint32_t count, const char *file, int line);
void mbar_fence_init(const char *file, int line);
void mbar_wait(uint32_t bar, uint32_t parity, const char *file, int line);
void mbar_arrive(uint32_t bar, const char *file, int line);
void mbar_expect_arrive(uint32_t bar, uint32_t bytes, const char *file, int line);
void st_async_v2(uint32_t addr, uint32_t x, uint32_t y, uint32_t bar, const char *file, int line);

/* sm_90a: bar.sync `id` over `threads` threads of the CTA, and one thread's share of a
 * wgmma.mma_async m64nNk32 with 8-bit operands in shared memory (K-major, 128-byte swizzle;
 * formats as dec_elem: 0 E4M3, 1 E5M2): acc[N/2] (+)= this thread's fragment of A x B^T. */
void named_barrier(uint32_t id, uint32_t threads, const char *file, int line);
void wgmma_fp8(int n, float *acc, uint64_t adesc, uint64_t bdesc, uint32_t scale_d, int a_fmt,
               int b_fmt, const char *file, int line);

/* cluster */
uint32_t cluster_reg(int which); /* 0 ctarank, 1 ctaid.x, 2 ctaid.y, 3 nctaid.x, 4 nctaid.y */
uint32_t mapa(uint32_t addr, uint32_t rank, const char *file, int line);
void cluster_arrive(const char *file, int line);
void cluster_wait(const char *file, int line);

/* warp collectives (full mask) */
enum WarpOp {
    WOP_ELECT = 1,
    WOP_SYNC,
    WOP_BALLOT,
    WOP_SHFL0,
    WOP_ALLOC,
    WOP_RELINQUISH,
    WOP_DEALLOC,
    WOP_LD
};
uint32_t warp_collective(int op, uint32_t value, const char *file, int line);

/* global memory */
uint32_t atom_add(uint32_t *p, uint32_t v, const char *file, int line);
uint64_t ld_relaxed(const uint64_t *p, const char *file, int line);
void st_relaxed(uint64_t *p, uint64_t v, const char *file, int line);

} // namespace fm

#endif
