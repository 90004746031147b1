/*
 * Host encoders and decoders for the element and scale formats (docs/hardware-facts.md
 * F1-F3): round to nearest even, saturating to the largest finite value, NaN kept where the
 * format has one. Decoders are exact in double. Used by the host references, the tests and
 * `jitgemm run` to make inputs.
 */
#ifndef JIT_FORMATS_H
#define JIT_FORMATS_H

#include <stdint.h>

double jit__e4m3_decode(uint8_t code);
uint8_t jit__e4m3_encode(float x);
double jit__e5m2_decode(uint8_t code);
uint8_t jit__e5m2_encode(float x);
double jit__e2m1_decode(uint8_t nibble); /* low 4 bits */
uint8_t jit__e2m1_encode(float x);       /* 4-bit code in the low nibble */
double jit__ue8m0_decode(uint8_t code);  /* 0xFF: NaN */
uint8_t jit__ue8m0_encode_rp(float x);   /* round up (cvt.rp.satfinite), as producers use */
double jit__ue4m3_decode(uint8_t code);
uint8_t jit__ue4m3_encode(float x);
double jit__ue5m3_decode(uint8_t code);
uint8_t jit__ue5m3_encode(float x);
/* BF16 as its 16 bits: round to nearest even from float, exact decode. */
uint16_t jit__bf16_encode(float x);
float jit__bf16_decode(uint16_t bits);

#endif
