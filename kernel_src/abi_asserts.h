/*
 * The static_asserts that tie a family's device parameter block to its host mirror (abi.h):
 * one per field offset and one for the size, written into the generated source so that a
 * layout drift stops NVRTC instead of corrupting a launch. Shared by every family that passes a
 * struct by value, so that the form NVRTC accepts is written once (see abi_asserts.c).
 */
#ifndef JITGEMM_KERNEL_SRC_ABI_ASSERTS_H
#define JITGEMM_KERNEL_SRC_ABI_ASSERTS_H

#include <stddef.h>

#include "strbuf.h"

typedef struct jit__abi_field {
    const char *name; /* the field's name in the device struct */
    size_t offset;    /* offsetof() of the host mirror's field */
} jit__abi_field_t;

/* Append "static_assert(<offset of type.field> == offset, ...)" for each field, then the size. */
void jit__emit_abi_asserts(jit__sb_t *sb, const char *device_type, const jit__abi_field_t *fields,
                           size_t n_fields, size_t size);

#endif
