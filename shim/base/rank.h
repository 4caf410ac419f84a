/* rank.h: which process of a job of many this is, as its launcher says. */
#ifndef GPULEAK_RANK_H
#define GPULEAK_RANK_H

/* The process's rank: RANK, else LOCAL_RANK, whichever is 1 to 9 decimal
 * digits; NULL when neither is. A value that is set but not a number (a
 * path, say: it goes into the report's path) is ignored, with one line on
 * stderr the first time. The string is the environment's. */
const char *rank_of_process(void);

#endif
