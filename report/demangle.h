/* demangle.h: C++ names made readable for the command's views. The shim
 * names functions only with a demangler the program already has, so a C
 * program's report keeps C++ symbols raw ("_ZL16leak_from_staticm"); the
 * command demangles them as it reads (load.c) and again as it writes the
 * text it read back out (dump.c). */
#ifndef GPULEAK_CLI_DEMANGLE_H
#define GPULEAK_CLI_DEMANGLE_H

#include <jansson.h>

/* Replaces obj's key, an Itanium-mangled name, with its demangled form in
 * the document itself, so every view (and the page gpuleak html writes from
 * it) shows "leak_from_static(unsigned long) [clone .constprop.0]". Names
 * that are not mangled, or that the demangler refuses, stay as written. */
void demangle_field(json_t *obj, const char *key);

#endif
