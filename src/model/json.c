// json.c: the JSON string escaper of json.h.
#include "json.h"

#include <stdio.h>

size_t aw_json_escape(char *out, size_t cap, const char *s) {
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        char e[8] = {(char)*p};
        size_t k = 1;
        if (*p == '"' || *p == '\\') e[0] = '\\', e[1] = (char)*p, k = 2;
        else if (*p == '\n') e[0] = '\\', e[1] = 'n', k = 2;
        else if (*p < 0x20) k = (size_t)snprintf(e, sizeof e, "\\u%04x", *p);
        for (size_t i = 0; i < k; i++, n++)
            if (n + 1 < cap) out[n] = e[i];
    }
    if (cap) out[n < cap ? n : cap - 1] = '\0';
    return n;
}
