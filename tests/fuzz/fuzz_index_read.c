/*
 * The listing's reader of the index (cache/index_read.c) against the jansson reader, on
 * arbitrary bytes: the fast reader may hand any input to jansson, but whatever it reads itself
 * must give exactly what jansson's reading gives (same usability, same entries, every field).
 * The first byte picks the file: 'J' makes the rest manifest.journal after a fixed valid
 * manifest; anything else makes the whole input manifest.json, with a one-line journal.
 */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cache_private.h"
#include "fuzz_cache_dir.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char k_manifest[] =
    "{\n \"format\": 1,\n \"entries\": {\n  \"9f1417ed373e78741eb9d4c644e07da1\": {\n"
    "   \"hash\": \"9f1417ed373e78741eb9d4c644e07da1\",\n"
    "   \"key_text\": \"jitgemm key=3 family=fp8_wgmma arch=sm_90a n=256\",\n"
    "   \"arch\": \"sm_90a\",\n   \"target\": \"sm_90a\",\n   \"fallback\": false,\n"
    "   \"check_target\": \"\",\n"
    "   \"toolchain\": {\n    \"nvrtc\": \"13.5\",\n    \"nvjitlink\": \"13.5\"\n   },\n"
    "   \"generator_version\": 3,\n"
    "   \"device_hash\": \"fc452fbcb1e38d4f9e99bc92b88729d6\",\n"
    "   \"kernel_name\": \"jitgemm_fp8_wgmma\",\n"
    "   \"block\": [\n    384,\n    1,\n    1\n   ],\n"
    "   \"cluster\": [\n    1,\n    1,\n    1\n   ],\n"
    "   \"smem_bytes\": 208000,\n   \"registers\": 168,\n   \"spill_stores\": 0,\n"
    "   \"spill_loads\": 0,\n   \"stack_bytes\": 0,\n   \"compile_seconds\": 0.551430511,\n"
    "   \"checksum\": \"1b77d31159e55f9bafe98a66620ee34e\",\n   \"size\": 18648,\n"
    "   \"created\": 1796142843,\n   \"last_used\": 1796142843\n  }\n }\n}";
static const char k_journal[] = "{\"usage\": 5}\n";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > 0 && data[0] == 'J') {
        fuzz_cache_put("manifest.json", (const uint8_t *)k_manifest, sizeof(k_manifest) - 1);
        fuzz_cache_put(JIT__CACHE_JOURNAL, data + 1, size - 1);
    } else {
        fuzz_cache_put("manifest.json", data, size);
        fuzz_cache_put(JIT__CACHE_JOURNAL, (const uint8_t *)k_journal, sizeof(k_journal) - 1);
    }
    jit__cache_entry_t *got = NULL;
    size_t n = 0;
    jit__index_state_t fast, slow;
    if (jit__cache_index_read(fuzz_cache(), &got, &n, &fast) != 0)
        abort();
    json_t *tree = NULL;
    jit__cache_index_load(fuzz_cache(), &tree, &slow);
    if (jit__cache_index_usable(&fast) != jit__cache_index_usable(&slow) ||
        fast.manifest != slow.manifest || fast.journal != slow.journal ||
        (tree != NULL) != jit__cache_index_usable(&fast) || (!tree && (got || n)))
        abort();
    if (tree) {
        if (n != json_object_size(tree))
            abort();
        for (size_t i = 0; i < n; i++) {
            jit__cache_entry_t want;
            char why[JIT__CACHE_WHY_MAX];
            if ((i > 0 && strcmp(got[i - 1].hash, got[i].hash) >= 0) ||
                jit__cache_entry_from_object(json_object_get(tree, got[i].hash), &want, why,
                                             sizeof(why)) != 0 ||
                !jit__cache_entry_equal(&got[i], &want) || got[i].created != want.created ||
                got[i].last_used != want.last_used ||
                memcmp(&got[i].compile_seconds, &want.compile_seconds, sizeof(double)) != 0)
                abort();
        }
    }
    json_decref(tree);
    free(got);
    return 0;
}
