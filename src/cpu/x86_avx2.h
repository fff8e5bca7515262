/* x86_avx2.h - what the x86-64 kernels built without -mavx2 share
 * (k_matmul_q_x86.c, k_q8_tile_x86.c): the target attribute of their AVX2
 * functions, a horizontal sum, an f16 scale read from a block, and a CPU
 * feature test asked once.  Include it only where __x86_64__ is defined. */
#ifndef RLX_X86_AVX2_H
#define RLX_X86_AVX2_H

#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#define AVX2 __attribute__((target("avx2,fma,f16c")))

/* (l0 + l4 + l2 + l6) + (l1 + l5 + l3 + l7) */
AVX2 static inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

/* the bits of the f16 at p (a block's scale or minimum), unaligned */
static inline uint16_t half_at(const uint8_t *p) {
  uint16_t h;
  memcpy(&h, p, 2);
  return h;
}
/* its value */
AVX2 static inline float f16(const uint8_t *p) { return _cvtsh_ss(half_at(p)); }

/* ask() the first time, its answer after: CPUID traps to the hypervisor in
 * a VM (asked on every call it took 12% of a token's time). */
static inline int cpu_has_once(int *known, int (*ask)(void)) {
  int k = __atomic_load_n(known, __ATOMIC_RELAXED); /* 0: not asked yet, 1: no, 2: yes */
  if (!k) {
    __builtin_cpu_init();
    k = ask() ? 2 : 1;
    __atomic_store_n(known, k, __ATOMIC_RELAXED);
  }
  return k == 2;
}

#endif
