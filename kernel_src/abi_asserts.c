/*
 * The parameter block's layout asserted in the generated source. The offset is written with
 * __INTADDR__, the NVRTC front end's constant address: NVRTC 13.0 (the GPU host's) has no
 * __builtin_offsetof, and the generated source includes no <cstddef> for offsetof. The ctest
 * compile_system_nvrtc compiles a kernel of every sm_90a route with the system NVRTC for this
 * reason.
 */
#include "abi_asserts.h"

void jit__emit_abi_asserts(jit__sb_t *sb, const char *device_type, const jit__abi_field_t *fields,
                           size_t n_fields, size_t size) {
    for (size_t i = 0; i < n_fields; i++)
        jit__sb_printf(sb, "static_assert(__INTADDR__(&((%s *)0)->%s) == %zu, \"abi.h\");\n",
                       device_type, fields[i].name, fields[i].offset);
    jit__sb_printf(sb, "static_assert(sizeof(%s) == %zu, \"abi.h\");\n", device_type, size);
}
