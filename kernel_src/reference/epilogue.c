/*
 * The epilogue arithmetic both host references share: SwiGLU of a gate/up pair, the residual
 * of linear_add, and the propagation of their accumulation bounds, so the FP8
 * row-scaled and the block-scaled references cannot drift apart in what they call the right
 * answer.
 */
#include <math.h>

#include "formats.h"
#include "reference.h"

/* Written with exp of a non-positive argument only, so a very negative gate gives its tiny
 * true value (down to double's range) instead of x / inf = -0. */
static double sigmoid(double x) {
    if (x >= 0)
        return 1.0 / (1.0 + exp(-x));
    double e = exp(x);
    return e / (1.0 + e);
}

void jit__ref_swiglu(double g, double g_mag, double u, double u_mag, double *out, double *mag) {
    double s = sigmoid(g);
    double silu = g * s;
    /* d/dg g*sigmoid(g) = sigmoid(g) * (1 + g * (1 - sigmoid(g))) */
    double slope = s * (1.0 + g * (1.0 - s));
    /* First order is not a bound where the gate's error is not small against the scale on which
     * silu bends (a gate of a few units at a magnitude in the thousands, as one 128-K block with
     * a large scale makes it): over an error of up to delta = 2^-8 g_mag, far above any the
     * kernels are held to, the slope is at most |silu'(g)| + delta / 2, since |silu''| <= 1/2
     * (its largest value, at 0), and never more than 1.1 (max silu' = 1.0998, near g = 2.4). */
    double slope_max = fmin(fabs(slope) + 0.5 * ldexp(g_mag, -8), 1.1);
    *out = silu * u;
    *mag = fabs(u) * slope_max * g_mag + fabs(silu) * u_mag;
}

void jit__ref_add_residual(const uint16_t *residual, int64_t ldr, int64_t r, int64_t j, double *out,
                           double *mag) {
    double res = (double)jit__bf16_decode(residual[r * ldr + j]);
    *out += res;
    *mag += fabs(res);
}
