#include "ptx_check.h"

#include <string.h>

const char *ptx_global_data_line(const char *ptx) {
    for (const char *l = ptx; l && *l;) {
        while (*l == ' ' || *l == '\t')
            l++;
        if (!strncmp(l, ".visible ", 9))
            l += 9;
        else if (!strncmp(l, ".extern ", 8))
            l += 8;
        if (!strncmp(l, ".global ", 8) || !strncmp(l, ".global\t", 8))
            return l;
        const char *eol = strchr(l, '\n');
        l = eol ? eol + 1 : NULL;
    }
    return NULL;
}
