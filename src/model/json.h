// json.h: the one JSON string escaper, for every writer of JSON text in C: the forms' listing
// (form_options.c) and the native trainer's tokenizer.json (tools/tokenizer_files.h).
#ifndef AW_MODEL_JSON_H
#define AW_MODEL_JSON_H

#include <stddef.h>

// Writes s (UTF-8, NUL-terminated) as the inside of a JSON string into out (cap bytes; NUL-terminated
// when cap > 0): quotes and backslashes escaped, \n, other control characters as \u00XX, every other
// byte as it is. Returns the length of the whole text (without the NUL), as snprintf does.
size_t aw_json_escape(char *out, size_t cap, const char *s);

#endif
