/* A sidecar (kernels/<hash>.json): jit__cache_entry_from_text on arbitrary bytes. An entry it
 * accepts must survive writing and reading back unchanged, since publish writes sidecars with
 * jit__cache_entry_to_json and every later hit reads them with this parser. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cache_private.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    jit__cache_entry_t e, back;
    char why[JIT__CACHE_WHY_MAX];
    if (jit__cache_entry_from_text((const char *)data, size, &e, why, sizeof(why)) != 0)
        return 0;
    char *text = jit__cache_entry_to_json(&e);
    if (!text)
        abort();
    if (jit__cache_entry_from_text(text, strlen(text), &back, why, sizeof(why)) != 0 ||
        !jit__cache_entry_equal(&e, &back) || e.created != back.created ||
        e.last_used != back.last_used)
        abort();
    free(text);
    return 0;
}
