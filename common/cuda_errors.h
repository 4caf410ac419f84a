/* cuda_errors.h: a CUDA driver result's name, for every view. */
#ifndef GPULEAK_CUDA_ERRORS_H
#define GPULEAK_CUDA_ERRORS_H

/* "CUDA_ERROR_OUT_OF_MEMORY" for 2, and so on; NULL for a number the table
 * does not know. The string is static. */
const char *cuda_error_name(int result);

#endif
