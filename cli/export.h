/* export.h: `gpuleak export FILE --format folded|csv|chrome-trace [-o OUT]`. */
#ifndef GPULEAK_CLI_EXPORT_H
#define GPULEAK_CLI_EXPORT_H

int export_main(int argc, char **argv);

#endif
