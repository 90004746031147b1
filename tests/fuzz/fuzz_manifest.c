/* manifest.json as the cache reads it: jit__cache_manifest_load on arbitrary bytes. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>

#include "cache_private.h"
#include "fuzz_cache_dir.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_cache_put("manifest.json", data, size);
    json_t *entries = NULL;
    char why[JIT__CACHE_WHY_MAX];
    jit__manifest_state_t st = jit__cache_manifest_load(fuzz_cache(), &entries, why, sizeof(why));
    /* A loaded manifest has every entry validated; an unloaded one hands nothing out. */
    if ((st == JIT__MANIFEST_OK) != (entries != NULL))
        abort();
    if (entries) {
        const char *hash;
        json_t *value;
        json_object_foreach(entries, hash, value) {
            jit__cache_entry_t e;
            if (jit__cache_entry_from_object(value, &e, why, sizeof(why)) != 0)
                abort();
        }
    }
    json_decref(entries);
    return 0;
}
