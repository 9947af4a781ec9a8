// api_positional.c: the table of positional encodings (src/model/positional.h) for lib.positionals.
#include "api.h"

#include "../model/positional.h"

AW_API int32_t aw_positional_count(void) { return AW_POSITIONAL_COUNT; }

// Field `field` of row i: 0 name, 1 label, 2 words, 3 paper (a static string); NULL out of range.
AW_API const char *aw_positional_info(int32_t i, int32_t field) {
    const aw_positional *p = aw_positional_at(i);
    if (!p) return NULL;
    switch (field) {
    case 0: return p->name;
    case 1: return p->label;
    case 2: return p->words;
    case 3: return p->paper;
    default: return NULL;
    }
}
