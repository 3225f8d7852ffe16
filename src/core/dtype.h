/* dtype.h — element types shared by model files, tensors and backends, and
 * the exact conversions between them.
 *
 * bf16 is the top half of an IEEE float32; f16 is IEEE binary16. Conversions
 * to float are exact; conversions from float round to nearest even (as torch
 * does), with NaN kept NaN.
 */
#ifndef CT_CORE_DTYPE_H
#define CT_CORE_DTYPE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef enum ct_dtype {
    CT_DTYPE_F32 = 0,
    CT_DTYPE_F16 = 1,
    CT_DTYPE_BF16 = 2,
    CT_DTYPE_I32 = 3,
    CT_DTYPE_I64 = 4,
    CT_DTYPE_I8 = 5,
    CT_DTYPE_U8 = 6,
    /* Q8: a quantised weight matrix (N, K) on a host backend, never a file
     * type: N·K int8 rows, then N f32 per-row scales and N int32 row sums
     * (compute/quant.h has the layout); value = scale[n] · q[n][k]. */
    CT_DTYPE_Q8 = 7,
    /* Q8_0: ggml's block type (GGUF tensor type 8), a file type and a
     * weight type: each row of K elements (K % 32 == 0) is K/32 blocks of
     * {f16 scale d, int8 q[32]} (34 bytes, no padding); value = d · q.
     * Not an element type: ct_dtype_size is 0, ct_dtype_nbytes gives the
     * bytes of n elements (compute/quant.h has the product). */
    CT_DTYPE_Q8_0 = 8,
    CT_DTYPE_COUNT
} ct_dtype;

static inline size_t ct_dtype_size(ct_dtype t) {
    switch (t) {
    case CT_DTYPE_F32: return 4;
    case CT_DTYPE_F16: return 2;
    case CT_DTYPE_BF16: return 2;
    case CT_DTYPE_I32: return 4;
    case CT_DTYPE_I64: return 8;
    case CT_DTYPE_I8: return 1;
    case CT_DTYPE_U8: return 1;
    case CT_DTYPE_Q8: return 1; /* the int8 part; the scales follow it */
    default: return 0; /* Q8_0: blocks, see ct_dtype_nbytes */
    }
}

#define CT_Q8_0_BLOCK 32       /* elements per Q8_0 block */
#define CT_Q8_0_BLOCK_BYTES 34 /* f16 scale + 32 int8 */

/* Bytes of n elements of type t (n a multiple of 32 for Q8_0). */
static inline size_t ct_dtype_nbytes(ct_dtype t, size_t n) {
    if (t == CT_DTYPE_Q8_0) return n / CT_Q8_0_BLOCK * CT_Q8_0_BLOCK_BYTES;
    return n * ct_dtype_size(t);
}

/* Name as safetensors spells it ("F32", "BF16", ...). */
static inline const char *ct_dtype_name(ct_dtype t) {
    static const char *names[] = {"F32", "F16", "BF16", "I32", "I64", "I8", "U8", "Q8", "Q8_0"};
    return (unsigned)t < CT_DTYPE_COUNT ? names[t] : "?";
}

static inline float ct_bf16_to_f32(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static inline uint16_t ct_f32_to_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40); /* quiet NaN */
    u += 0x7fffu + ((u >> 16) & 1u);                                         /* round to nearest even */
    return (uint16_t)(u >> 16);
}

static inline float ct_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t man = h & 0x3ffu;
    uint32_t u;
    if (exp == 0) {
        if (man == 0) {
            u = sign;
        } else { /* subnormal: normalise */
            int e = -1;
            do {
                e++;
                man <<= 1;
            } while (!(man & 0x400u));
            u = sign | ((uint32_t)(127 - 15 - e) << 23) | ((man & 0x3ffu) << 13);
        }
    } else if (exp == 31) {
        u = sign | 0x7f800000u | (man << 13);
    } else {
        u = sign | ((exp + 127 - 15) << 23) | (man << 13);
    }
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static inline uint16_t ct_f32_to_f16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    uint32_t sign = (u >> 16) & 0x8000u;
    uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return (uint16_t)(sign | 0x7e00u); /* NaN */
    if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* overflow (after rounding) -> inf */
    if (a < 0x38800000u) {                                    /* subnormal or zero in f16 */
        if (a < 0x33000000u) return (uint16_t)sign;           /* < half the smallest subnormal */
        uint32_t man = (a & 0x7fffffu) | 0x800000u;
        int shift = (int)(113 - (a >> 23)) + 13; /* 14..24 */
        uint32_t half = man >> shift;
        uint32_t rem = man & ((1u << shift) - 1u);
        uint32_t mid = 1u << (shift - 1);
        if (rem > mid || (rem == mid && (half & 1u))) half++;
        return (uint16_t)(sign | half);
    }
    uint32_t r = a + 0xfffu + ((a >> 13) & 1u) - ((127u - 15u) << 23);
    return (uint16_t)(sign | (r >> 13));
}

#endif
