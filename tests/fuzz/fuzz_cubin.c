/* The ELF reader behind a cubin's register and stack figures: jit__cubin_resources. */
#include <stdint.h>
#include <stdlib.h>

#include "cubin_info.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    int regs = -1, frame = -1;
    int r = jit__cubin_resources(data, size, &regs, &frame);
    if (r != 0 && r != -1)
        abort();
    if (regs < 0 || frame < 0)
        abort();
    return 0;
}
