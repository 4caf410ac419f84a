/* demangle.c: the C++ runtime's demangler, loaded into this command. */
#define _GNU_SOURCE
#include "demangle.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

typedef char *(*cxa_demangle_fn)(const char *, char *, size_t *, int *);

/* The C++ runtime's demangler, loaded once into this command (never into
 * the watched program); NULL where there is none. */
static cxa_demangle_fn demangler(void)
{
    static int looked;
    static cxa_demangle_fn fn;
    if (!looked) {
        looked = 1;
        void *h = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);
        fn = h != NULL ? (cxa_demangle_fn)dlsym(h, "__cxa_demangle") : NULL;
    }
    return fn;
}

void demangle_field(json_t *obj, const char *key)
{
    json_t *v = json_object_get(obj, key);
    const char *name = json_is_string(v) ? json_string_value(v) : NULL;
    if (name == NULL || strncmp(name, "_Z", 2) != 0 || demangler() == NULL)
        return;
    int status = -1;
    char *plain = demangler()(name, NULL, NULL, &status);
    if (plain != NULL && status == 0)
        json_string_set(v, plain);
    free(plain);
}
