// thread_alloc.h: included before every source of the threaded build (build.sh: -include). The
// allocator (Emscripten's dlmalloc, built without locks) is entered by one thread at a time: every
// malloc, calloc, realloc and free of the library goes through thread_alloc.c's lock.
#ifndef AW_THREAD_ALLOC_H
#define AW_THREAD_ALLOC_H
#include <stddef.h>
void *aw_mt_malloc(size_t n);
void *aw_mt_calloc(size_t n, size_t size);
void *aw_mt_realloc(void *p, size_t n);
void aw_mt_free(void *p);
#define malloc aw_mt_malloc
#define calloc aw_mt_calloc
#define realloc aw_mt_realloc
#define free aw_mt_free
#endif
