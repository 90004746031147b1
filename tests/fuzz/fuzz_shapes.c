/* The shape list (docs/shape-list.md): jit__shapes_parse_text on arbitrary bytes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "shapes.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    /* The reader takes NUL-terminated text, as jit__shapes_parse_file hands it. */
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    jit__diag_t d;
    jit__diag_init(&d);
    jit__shape_list_t list;
    jit_status_t st = jit__shapes_parse_text(text, "fuzz", &list, &d);
    if (st == JIT_OK) {
        /* Every problem of an accepted list is one the API accepts as a shape. */
        size_t n = jit__shapes_problem_count(&list);
        jit_problem_t *p = calloc(n ? n : 1, sizeof(*p));
        if (!p)
            abort();
        jit__shapes_problems(&list, p, NULL);
        for (size_t i = 0; i < n; i++)
            if (p[i].m <= 0 || p[i].n <= 0 || p[i].k <= 0)
                abort();
        free(p);
    } else if (list.count != 0 || list.entries) {
        abort();
    }
    jit__shapes_free(&list);
    jit__diag_clear(&d);
    free(text);
    return 0;
}
